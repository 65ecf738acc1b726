package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// New files told without git. A turn that only adds files is common (an
// agent writes a test, a new package), and through git it costs two
// processes (update-index, then the diff), ≈ 1.3 ms each to start on a
// small VM. A new file's change is only its own content: added, every
// line added, one range (after line 0), or binary. The tracker reads that
// itself where git would say exactly the same, and keeps such files out
// of its small index until a look needs git anyway; then they are added
// to it like any other path.
//
// Git would say the same when nothing could pair the file with another
// path or read it otherwise:
//   - no deletion, rename or copy in the change and none in the look (-M
//     pairs a new file with a deleted one);
//   - the path is not in the base (then it is an edit, not an addition);
//   - a regular file (a link's change is its target) of at most
//     newFileMax bytes;
//   - no attributes anywhere (no .gitattributes in the worktree, none in
//     info/attributes, no core.attributesFile or its default file: they
//     could make it binary, filter it or change its text), and no
//     core.bigFileThreshold (past it, git calls a file binary). These are
//     read at the first new file after a full look; a .gitattributes made
//     later is a full look (incremental), a configuration changed later is
//     not seen, as check-ignore reads .gitignore files once.
//
// A binary file is one with a NUL byte in its first 8000 bytes, as git's
// buffer_is_binary decides; git counts a last line without a newline as a
// line. TestTrackerMatchesChanges checks every such look against a whole
// snapshot.

// newFileMax bounds the files read here: a larger one is git's.
const newFileMax = 1 << 20

// plainState says whether new files may be told without git, worked out
// once per full look.
type plainState int

const (
	plainUnknown plainState = iota
	plainYes
	plainNo
)

// tellNew returns the changes of the new files paths (present, not
// ignored, not in the small index), or false when git must tell them.
func (t *Tracker) tellNew(ctx context.Context, paths []string) (map[string]FileChange, bool) {
	if slices.ContainsFunc(t.gitFiles, moved) {
		return nil, false
	}
	if len(paths) == 0 {
		return nil, t.plain == plainYes
	}
	if t.plain == plainUnknown {
		t.plain = plainNo
		if ok, err := t.plainRepo(ctx); err != nil {
			t.m.log.Debug("radar: new files go through git", "path", t.p.Path, "err", err)
		} else if ok {
			t.plain = plainYes
		}
	}
	if t.plain != plainYes {
		return nil, false
	}
	out := make(map[string]FileChange, len(paths))
	for _, p := range paths {
		if t.inBase[p] {
			return nil, false
		}
		f, ok := newFileChange(filepath.Join(t.p.Path, filepath.FromSlash(p)), p)
		if !ok {
			return nil, false
		}
		out[p] = f
	}
	return out, true
}

// plainRepo reports whether the worktree has no attributes and no
// core.bigFileThreshold, and reads the base's paths (Tracker.inBase).
func (t *Tracker) plainRepo(ctx context.Context) (bool, error) {
	if present(filepath.Join(t.dirs.common, "info", "attributes")) {
		return false, nil
	}
	cfg, err := t.m.git.run(ctx, t.p.Path, gitOpts{readOnly: true}, "config", "-z", "--get-regexp", `^core\.(attributesfile|bigfilethreshold)$`)
	var ee *ExitError
	switch {
	case errors.As(err, &ee) && ee.Code == 1: // none set
	case err != nil:
		return false, err
	default:
		if len(bytes.TrimSpace(cfg)) > 0 {
			return false, nil
		}
	}
	if f := defaultAttributesFile(); f != "" && present(f) {
		return false, nil
	}
	// Every .gitattributes, tracked or not, ignored or not: git reads
	// each.
	attrs, err := t.m.git.run(ctx, t.p.Path, gitOpts{readOnly: true}, "ls-files", "-z", "--cached", "--others", "--", ":(glob)**/.gitattributes")
	if err != nil {
		return false, err
	}
	if len(attrs) > 0 {
		return false, nil
	}
	tree, err := t.m.git.run(ctx, t.p.Path, gitOpts{readOnly: true}, "ls-tree", "-r", "-z", "--name-only", "--full-tree", t.base)
	if err != nil {
		return false, err
	}
	t.inBase = map[string]bool{}
	for _, p := range splitNUL(tree) {
		t.inBase[p] = true
	}
	return true, nil
}

// defaultAttributesFile is where git looks for the user's attributes when
// core.attributesFile is unset: $XDG_CONFIG_HOME/git/attributes, else
// ~/.config/git/attributes.
func defaultAttributesFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "attributes")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "git", "attributes")
	}
	return ""
}

// newFileChange is the change git tells for the new regular file at abs
// (path p): every line added, or binary.
func newFileChange(abs, p string) (FileChange, bool) {
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > newFileMax {
		return FileChange{}, false
	}
	b, err := os.ReadFile(abs)
	if err != nil || len(b) > newFileMax {
		return FileChange{}, false
	}
	f := FileChange{Path: p, Status: "A"}
	head := b[:min(len(b), 8000)]
	switch {
	case bytes.IndexByte(head, 0) >= 0:
		f.Binary = true
	case len(b) > 0:
		f.Added = bytes.Count(b, []byte{'\n'})
		if b[len(b)-1] != '\n' {
			f.Added++
		}
		f.Ranges = []LineRange{{Start: 1, End: 0}}
	}
	return f, true
}

// withNew ends a look whose new files were told without git: an edit of
// a path the small index holds still has git diff those paths (and only
// those); the change is git's part and the new files, by path.
func (t *Tracker) withNew(ctx context.Context, touched map[string]bool, told map[string]FileChange) ([]FileChange, bool, error) {
	var edited bool
	for p := range touched {
		if t.inIndex[p] {
			edited = true
			break
		}
	}
	if edited {
		spec := map[string]bool{}
		for _, f := range t.gitFiles {
			for _, k := range keys(f) {
				spec[k] = true
			}
		}
		for p := range touched {
			if t.inIndex[p] {
				spec[p] = true
			}
		}
		if len(spec) > trackMaxPaths {
			return nil, false, nil
		}
		paths := make([]string, 0, len(spec))
		for p := range spec {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		files, _, err := t.m.diffRaw(ctx, t.p.Path, gitOpts{readOnly: true, env: []string{"GIT_INDEX_FILE=" + t.indexPath(), "GIT_LITERAL_PATHSPECS=1"}},
			"diff", []string{t.base}, paths)
		if err != nil {
			return nil, false, err
		}
		if slices.ContainsFunc(files, moved) {
			return nil, false, fmt.Errorf("workspace: a look without deletions found %s", strings.Join(changeNames(files), ", "))
		}
		t.gitFiles = files
	}
	if t.fresh == nil {
		t.fresh = map[string]FileChange{}
	}
	for p, f := range told {
		t.fresh[p] = f
	}
	t.looks[1].Add(1)
	t.told.Add(1)
	t.setFiles()
	return t.files, true, nil
}

// setFiles makes the change git's part and the new files told without
// it, in git's order (by path: no rename is in either).
func (t *Tracker) setFiles() {
	files := slices.Clone(t.gitFiles)
	for _, f := range t.fresh {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	t.files = files
	t.paths = map[string]bool{}
	for _, f := range files {
		for _, k := range keys(f) {
			t.paths[k] = true
		}
	}
}

// moved reports a change that -M could pair a new file with: a deletion,
// a rename or a copy.
func moved(f FileChange) bool { return f.Status != "A" && f.Status != "M" && f.Status != "T" }

// changeNames names files for an error: status and path.
func changeNames(files []FileChange) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Status+" "+f.Path)
	}
	return out
}
