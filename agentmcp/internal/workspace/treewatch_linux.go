package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

// treeWatch tells which paths of a worktree changed since it was last
// asked, as inotify reports them: every directory of the worktree is
// watched, but for those skip names (git-ignored ones, nested
// repositories) and the worktree's own .git file. The kernel queues an
// event while a change is being made, so a drain after a turn ended sees
// every change the turn made. Events are read only by drain: nothing runs
// between looks.
//
// A directory that appears is watched (then listed, so that what was made
// in it before the watch shows too) by the next drain, asking skip first.
// When events were lost (the kernel's queue overflowed), a directory
// moved away (its paths are unknown), or more than maxDirs directories
// would be watched, drain reports lost: the caller must read the whole
// worktree again.
//
// It is not safe for concurrent use: its Tracker calls it under its mutex.
type treeWatch struct {
	root    string
	fd      int
	maxDirs int
	wds     map[int32]string // watch descriptor → directory relative to root ("" for root)
	dirs    map[string]int32 // the reverse
	buf     []byte
	lost    bool
}

// treeMask: entries made, removed, moved, written or changed in mode;
// the directory itself removed or moved.
const treeMask = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
	syscall.IN_CLOSE_WRITE | syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_EXCL_UNLINK | syscall.IN_ONLYDIR

// errNoWatch: this system cannot watch a tree (not Linux, or inotify failed).
var errNoWatch = errors.New("workspace: cannot watch the worktree")

// newTreeWatch watches every directory below root for which skip (given
// the path relative to root, slash-separated) is false.
func newTreeWatch(root string, maxDirs int, skip func(rel string) bool) (*treeWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, errors.Join(errNoWatch, err)
	}
	w := &treeWatch{root: root, fd: fd, maxDirs: maxDirs, wds: map[int32]string{}, dirs: map[string]int32{},
		buf: make([]byte, 64<<10)}
	if _, err := w.watchTree("", skip); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// watchTree watches directory rel and every directory below it that skip
// allows, and returns the files (and links) found in them, relative to
// root. The watch is added before a directory is listed: what is made in
// it afterwards is an event.
func (w *treeWatch) watchTree(rel string, skip func(rel string) bool) ([]string, error) {
	if len(w.dirs) >= w.maxDirs {
		return nil, errors.Join(errNoWatch, errors.New("too many directories"))
	}
	n, err := syscall.InotifyAddWatch(w.fd, filepath.Join(w.root, filepath.FromSlash(rel)), treeMask)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil // gone again, or not a directory any more: its event says so
		}
		return nil, errors.Join(errNoWatch, err)
	}
	wd := int32(n)
	w.wds[wd] = rel
	w.dirs[rel] = wd
	ents, err := os.ReadDir(filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, nil // gone meanwhile: its event says so
	}
	var files []string
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		p := joinRel(rel, e.Name())
		if !e.IsDir() {
			files = append(files, p)
			continue
		}
		if skip(p) {
			continue
		}
		sub, err := w.watchTree(p, skip)
		if err != nil {
			return nil, err
		}
		files = append(files, sub...)
	}
	return files, nil
}

// treeEvents are what one drain read.
type treeEvents struct {
	// Paths changed (made, removed, moved, written, chmod-ed), relative
	// to the root, each once; a directory made is listed, not its files.
	Paths []string
	// NewDirs are the directories that appeared (also in Paths): the
	// caller decides with watchNew which to watch.
	NewDirs []string
	// Lost: the changes cannot be told (see treeWatch).
	Lost bool
}

// drain reads the queued events.
func (w *treeWatch) drain() treeEvents {
	seen := map[string]bool{}
	var ev treeEvents
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			ev.Paths = append(ev.Paths, p)
		}
	}
	for !w.lost {
		n, err := syscall.Read(w.fd, w.buf)
		if err != nil || n <= 0 {
			if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR) {
				w.lost = true
			}
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			break
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			e := (*syscall.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := cName(w.buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(e.Len)])
			off += syscall.SizeofInotifyEvent + int(e.Len)
			w.event(e.Wd, e.Mask, name, add, &ev)
		}
	}
	ev.Lost = w.lost
	return ev
}

// event applies one event.
func (w *treeWatch) event(wd int32, mask uint32, name string, add func(string), ev *treeEvents) {
	if mask&syscall.IN_Q_OVERFLOW != 0 {
		w.lost = true
		return
	}
	dir, ok := w.wds[wd]
	if !ok {
		return // a watch removed meanwhile
	}
	if mask&syscall.IN_IGNORED != 0 {
		delete(w.wds, wd)
		if w.dirs[dir] == wd {
			delete(w.dirs, dir)
		}
		return
	}
	if mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF) != 0 {
		if dir == "" {
			w.lost = true // the worktree itself went
		}
		return // the parent's event names it
	}
	if name == "" || name == ".git" {
		return
	}
	p := joinRel(dir, name)
	isDir := mask&syscall.IN_ISDIR != 0
	switch {
	case isDir && mask&syscall.IN_MOVED_FROM != 0:
		w.lost = true // what it held is elsewhere now, and unknown
	case isDir && mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0:
		if _, ok := w.dirs[p]; !ok {
			ev.NewDirs = append(ev.NewDirs, p)
		}
		add(p)
	case isDir && mask&syscall.IN_DELETE != 0:
		w.unwatch(p)
		add(p)
	case isDir:
		// A directory's own mode or times: nothing git records.
	default:
		add(p)
	}
}

// watchNew watches the new directory rel and what it holds that skip
// allows, and returns the files found in it.
func (w *treeWatch) watchNew(rel string, skip func(rel string) bool) ([]string, error) {
	files, err := w.watchTree(rel, skip)
	if err != nil {
		w.lost = true
	}
	return files, err
}

// unwatch stops watching directory rel and everything below it.
func (w *treeWatch) unwatch(rel string) {
	for d, wd := range w.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd)) // fails when the kernel ended it already
			delete(w.dirs, d)
			delete(w.wds, wd)
		}
	}
}

// close ends the watch.
func (w *treeWatch) close() {
	if w.fd >= 0 {
		syscall.Close(w.fd)
		w.fd = -1
	}
}

// cName is an event's name: NUL-padded.
func cName(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// joinRel joins a relative directory ("" for the root) and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
