//go:build !linux

package gitctx

import (
	"context"
	"path/filepath"
	"sync/atomic"
)

// Watcher reads the facts from the files on every call: without inotify
// nothing tells that they changed (the repository cache's stamps spare
// reading the files again, not the stats).
type Watcher struct {
	repos *repoInfoCache
	reads atomic.Int64 // facts read from the files (tests)
}

// New returns a Watcher.
func New(cfg Config) *Watcher {
	return &Watcher{repos: &repoInfoCache{entries: map[string]repoInfo{}}}
}

// Facts reads the git facts of dir from the repository's files; see the
// Linux version for what they are.
func (w *Watcher) Facts(_ context.Context, dir string) Facts {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	w.reads.Add(1)
	f, _, _ := w.repos.read(dir)
	return f
}

// Cached knows nothing without reading the files.
func (w *Watcher) Cached(string) (Facts, bool) { return Facts{}, false }

// Close does nothing.
func (w *Watcher) Close() error { return nil }
