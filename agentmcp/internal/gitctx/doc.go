// Package gitctx tells the git facts of a directory — the repository root,
// its name and the branch — from the repository's files, without running
// git: they are read on every turn of every session.
//
// A Watcher keeps the facts of each directory it was asked about until a
// file they come from changes, as inotify reports it (Linux); elsewhere it
// reads the files each time, sparing the reads (not the stats) of files
// whose stamps did not change. As git does with its index ("racy git"), a
// file modified shortly before it was read is read again every time. Up
// walks from a directory to the directories git itself would search,
// honouring GIT_CEILING_DIRECTORIES.
//
// A Watcher has one mutex, which guards its watches and facts; its
// repository cache has its own, taken inside it. Nothing else is shared:
// there are no package globals.
package gitctx

import "log/slog"

// Config configures a Watcher.
type Config struct {
	// Logger receives the watcher's logs. optional: nil discards them.
	Logger *slog.Logger
}
