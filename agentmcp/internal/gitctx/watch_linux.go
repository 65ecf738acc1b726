package gitctx

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Watcher keeps the git facts of directories and drops them when a
// file they depend on changes, as inotify reports it. The kernel queues an
// event while the change is being made, so reading the queue (one system
// call) before a lookup sees every change made before the turn began: a
// checkout in a terminal shows in the next turn, as with a stat of every
// file, and no "racy" window is needed.
//
// The facts of a directory depend on: in each directory from it up to / (or
// to below the nearest git ceiling, see Up),
// the entries ".git" and the next directory on the path (created, removed,
// renamed, rewritten); the directory itself (removed, moved); in the git
// directory HEAD and commondir; in the common directory config. Watches are
// added before the files are read, so a change while they are being read
// shows too. When inotify is unavailable, or a watch cannot be added, the
// facts are read from the files on every call.
type Watcher struct {
	repos *repoInfoCache // what was read of each repository's files

	mu      sync.Mutex                           // guards the fields below
	fd      int                                  // inotify instance, non-blocking; -1 before the first use or after a failure
	broken  bool                                 // inotify failed: read the files every time
	paths   map[string]int32                     // watched directory → watch descriptor
	dirs    map[int32]string                     // watch descriptor → directory
	deps    map[int32]map[string]map[string]bool // wd → entry name ("" for the directory itself) → cached directories
	entries map[string]Facts                     // directory → its facts
	buf     []byte

	reads atomic.Int64 // facts read from the files (tests)
}

// maxWatches bounds the watches: a proxy's sessions work in a few trees.
// Past it everything is dropped and watched afresh.
const maxWatches = 1024

// Watched events: in a directory on a path, entries appearing, going or
// being rewritten; in a git directory also files written in place.
const (
	pathMask = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
		syscall.IN_CLOSE_WRITE | syscall.IN_ATTRIB | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR
	gitDirMask = pathMask | syscall.IN_MODIFY
	// selfGone: the watched directory itself went (its watch ends).
	selfGone = syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_IGNORED | syscall.IN_UNMOUNT
)

// New returns a Watcher; it watches nothing until the first Facts.
func New(cfg Config) *Watcher {
	return &Watcher{fd: -1, repos: &repoInfoCache{entries: map[string]repoInfo{}}}
}

// Facts reads the git facts of dir from the repository's files (no git
// process: it runs on every turn). It never fails: anything it cannot tell
// is nil. The root is the nearest directory holding .git (a directory, or a
// file pointing to one as in worktrees and submodules); the branch comes
// from HEAD ("detached@<sha>" when detached); the name is the last path
// element of the origin remote's URL, else the root's directory name.
//
// Where the system can tell when files change (inotify on Linux), the facts
// of a directory are kept until a file they come from changes; a turn then
// costs one system call instead of a stat per directory up to the root.
func (w *Watcher) Facts(_ context.Context, dir string) Facts {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return w.facts(dir)
}

// Cached returns the facts of dir when they are known without reading any
// file (the watch has seen no change since they were read).
func (w *Watcher) Cached(dir string) (Facts, bool) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return w.cached(dir)
}

// Close stops watching; Facts then reads the files on every call. It is
// idempotent.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resetLocked()
	w.broken = true
	return nil
}

// facts returns the facts of dir (absolute).
func (w *Watcher) facts(dir string) Facts {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.startLocked() {
		w.reads.Add(1)
		f, _, _ := w.repos.read(dir)
		return f
	}
	w.drainLocked()
	if f, ok := w.entries[dir]; ok {
		return f
	}
	return w.fillLocked(dir)
}

// cached returns the facts of dir (absolute) if they are kept and still
// valid: it reads the watch's pending events (a non-blocking read) and no
// file.
func (w *Watcher) cached(dir string) (Facts, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 || w.broken {
		return Facts{}, false
	}
	w.drainLocked()
	f, ok := w.entries[dir]
	return f, ok
}

// startLocked opens the inotify instance on first use; it reports whether
// one is usable.
func (w *Watcher) startLocked() bool {
	if w.broken {
		return false
	}
	if w.fd >= 0 {
		return true
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		w.broken = true
		return false
	}
	w.fd = fd
	w.paths = map[string]int32{}
	w.dirs = map[int32]string{}
	w.deps = map[int32]map[string]map[string]bool{}
	w.entries = map[string]Facts{}
	if w.buf == nil {
		w.buf = make([]byte, 16<<10)
	}
	return true
}

// resetLocked drops every watch and every entry (overflow, too many
// watches, a failure); the next call starts afresh.
func (w *Watcher) resetLocked() {
	if w.fd >= 0 {
		syscall.Close(w.fd)
	}
	w.fd = -1
	w.paths, w.dirs, w.deps, w.entries = nil, nil, nil, nil
}

// fillLocked watches what the facts of dir depend on, reads them and keeps
// them.
func (w *Watcher) fillLocked(dir string) Facts {
	if len(w.paths) > maxWatches {
		w.resetLocked()
		if !w.startLocked() {
			w.reads.Add(1)
			f, _, _ := w.repos.read(dir)
			return f
		}
	}
	ok := true
	child := ""
	for d := range Up(dir) {
		names := []string{"", ".git"}
		if child != "" {
			names = append(names, child)
		}
		ok = ok && w.watchLocked(d, pathMask, dir, names...)
		child = filepath.Base(d)
	}
	w.reads.Add(1)
	f, gitDir, common := w.repos.read(dir)
	if gitDir != "" && ok {
		// The git directory is known once read: watch it, then read
		// again, so that nothing changed between the two goes unseen.
		ok = w.watchLocked(gitDir, gitDirMask, dir, "", "HEAD", "commondir") &&
			w.watchLocked(common, gitDirMask, dir, "", "config")
		w.reads.Add(1)
		var g2, c2 string
		f, g2, c2 = w.repos.read(dir)
		ok = ok && g2 == gitDir && c2 == common
	}
	if ok {
		w.entries[dir] = f
	}
	return f
}

// watchLocked watches directory d for mask and records that the facts of
// dir depend on its entries names ("" for d itself). It reports false when
// d cannot be watched (missing, not a directory, no permission, no watches
// left).
func (w *Watcher) watchLocked(d string, mask uint32, dir string, names ...string) bool {
	wd, ok := w.paths[d]
	if !ok || mask != pathMask {
		n, err := syscall.InotifyAddWatch(w.fd, d, mask|syscall.IN_MASK_ADD)
		if err != nil {
			return false
		}
		wd = int32(n)
		w.paths[d] = wd
		w.dirs[wd] = d
	}
	byName := w.deps[wd]
	if byName == nil {
		byName = map[string]map[string]bool{}
		w.deps[wd] = byName
	}
	for _, name := range names {
		set := byName[name]
		if set == nil {
			set = map[string]bool{}
			byName[name] = set
		}
		set[dir] = true
	}
	return true
}

// drainLocked reads every queued event and drops the entries they touch.
func (w *Watcher) drainLocked() {
	for w.fd >= 0 {
		// Raw: the descriptor is non-blocking, and this runs at the start
		// of every turn (see jsonrpcframe.Pipe for what a plain read costs).
		r, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(w.fd), uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
		n := int(r)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n <= 0 {
			if errno != syscall.EAGAIN {
				w.resetLocked() // unexpected: start afresh on the next call
			}
			return
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			nameBytes := w.buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			w.eventLocked(ev.Wd, ev.Mask, cString(nameBytes))
			if w.fd < 0 {
				return
			}
		}
	}
}

// eventLocked applies one event.
func (w *Watcher) eventLocked(wd int32, mask uint32, name string) {
	switch {
	case mask&syscall.IN_Q_OVERFLOW != 0:
		// Events were lost: nothing cached can be trusted.
		clear(w.entries)
	case mask&selfGone != 0:
		// The directory went (removed, moved, unmounted): its path now
		// names something else, or nothing.
		if d, ok := w.dirs[wd]; ok {
			w.unwatchLocked(d)
		}
	case len(w.deps[wd][name]) > 0:
		for dir := range w.deps[wd][name] {
			delete(w.entries, dir)
		}
		if d, ok := w.dirs[wd]; ok && mask&(syscall.IN_CREATE|syscall.IN_DELETE|syscall.IN_MOVED_FROM|syscall.IN_MOVED_TO) != 0 {
			// The entry's path names another file now: what is watched
			// at or below it is not on that path any more.
			w.unwatchLocked(filepath.Join(d, name))
		}
	}
}

// unwatchLocked stops watching directory p and everything watched below
// it; the facts that depended on those watches are dropped.
func (w *Watcher) unwatchLocked(p string) {
	var gone []int32
	for q, wd := range w.paths {
		if q == p || p == "/" || strings.HasPrefix(q, p+"/") {
			gone = append(gone, wd)
		}
	}
	for _, wd := range gone {
		for _, set := range w.deps[wd] {
			for dir := range set {
				delete(w.entries, dir)
			}
		}
		_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd)) // fails when the kernel ended it already
		delete(w.deps, wd)
		delete(w.dirs, wd)
		for q, x := range w.paths { // every path that led to it (symbolic links)
			if x == wd {
				delete(w.paths, q)
			}
		}
	}
}

// cString is the name of an event: NUL-padded.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
