//go:build !linux

package workspace

import "errors"

// treeWatch is not available without inotify: every look of a Tracker
// reads the whole worktree (see the Linux version).
type treeWatch struct{}

type treeEvents struct {
	Paths, NewDirs []string
	Lost           bool
}

var errNoWatch = errors.New("workspace: cannot watch the worktree on this system")

func newTreeWatch(root string, maxDirs int, skip func(rel string) bool) (*treeWatch, error) {
	return nil, errNoWatch
}

func (w *treeWatch) drain() treeEvents { return treeEvents{Lost: true} }
func (w *treeWatch) watchNew(rel string, skip func(string) bool) ([]string, error) {
	return nil, errNoWatch
}
func (w *treeWatch) unwatch(rel string) {}
func (w *treeWatch) close()             {}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
