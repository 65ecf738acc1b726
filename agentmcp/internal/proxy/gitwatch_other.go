//go:build !linux

package proxy

import "sync/atomic"

// factsCache reads the git facts of a directory on every call.
var factsCache = &factsWatcher{}

// factsWatcher reads the facts from the files on every call: without
// inotify nothing tells that they changed (repoCache's stamps spare reading
// the files again, not the stats).
type factsWatcher struct {
	reads atomic.Int64 // facts read from the files (tests)
}

// cached knows nothing without reading the files.
func (w *factsWatcher) cached(string) (repoFacts, bool) { return repoFacts{}, false }

func (w *factsWatcher) facts(dir string) repoFacts {
	w.reads.Add(1)
	f, _, _ := readGitFacts(dir)
	return f
}
