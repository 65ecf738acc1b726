package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// A Tracker keeps one live worktree's change (what Manager.Changes
// returns: paths and old-side line ranges against the base, committed or
// not) and reads again only what changed since its last look: the radar
// looks after every ended turn of every isolated agent, and a whole
// snapshot costs a `git add -A` of the worktree (tens of milliseconds in
// a 10,000-file repository).
//
// A full look is Changes; it also writes, to a small index of the
// tracker's own (<worktree git dir>/atm-radar.index), the working state
// of just the paths the change holds, and starts watching the worktree
// (treeWatch: inotify). A later look, while the refs it depends on are
// unchanged (the worktree's HEAD and branch, its record, the lead's HEAD
// and branch: read from their files, no git), reads the paths the watch
// saw change. Nothing changed: no git at all. Else git compares the base
// with the working tree through the small index, over the change's paths
// and the new ones (`git diff -M <base>`, limited to those paths: its cost
// does not grow with the repository), after adding to that index the
// paths it did not hold (`update-index --add --remove`; a new path is
// first asked of a long-lived `git check-ignore`, so that git-ignored
// files count as `git add -A` counts them). A turn that only edits files
// of its change costs one git process; one that first touches a file of
// the base, two; one that only adds files, none: a new file's change is
// its own content, which the tracker reads itself where git would say the
// same (track_new.go). Otherwise git does all hashing and diffing; the
// tracker only tells it which paths to look at.
//
// When a ref moved (the agent committed, the lead's checkout moved, a
// merge rewrote the record), git tells the base again (the record, HEAD,
// the merge base with the lead: what Changes does); while it is the same
// commit the tracker goes on. Any doubt is a full look: the first one, a
// base that moved (the agent took the lead's work in; a merge), lost events, a directory moved away, a
// .gitignore or .gitattributes changed, a nested repository or a path git
// cannot be given on one line, a failure. Without inotify (not Linux),
// and for a Manager on a host (Config.Host: no tree watch reaches over
// ssh, and the ref files are there), every look is a full one.
//
// Its methods are safe for concurrent use (a mutex: one look at a time).
type Tracker struct {
	m *Manager
	p Place

	mu      sync.Mutex // guards the fields below; held for a whole look
	closed  bool
	dirs    trackDirs
	watch   *treeWatch // nil until a full look starts one (or when none can be had)
	noWatch bool       // watching failed: every look is a full one
	ign     *ignoreCheck
	refs    refState        // the refs as of the last look
	rec     record          // the record as of the last look
	base    string          // the commit the change is against
	inIndex map[string]bool // paths the small index holds
	paths   map[string]bool // paths of the last change (both sides of a rename)
	files   []FileChange    // the last change: gitFiles and fresh, by path
	// gitFiles is the part of the change git told (through the small
	// index); fresh are new files told without it, kept out of the small
	// index until a look needs git (track_new.go).
	gitFiles []FileChange
	fresh    map[string]FileChange
	plain    plainState      // may new files be told without git
	inBase   map[string]bool // the base's paths (read with plain)

	looks [3]atomic.Int64 // full, incremental, unchanged (tests, benchmarks)
	told  atomic.Int64    // incremental looks that told new files without git
}

// trackDirs are where a worktree's refs and the small index are.
type trackDirs struct {
	gitDir, common, leadGitDir string
}

// trackMaxDirs bounds the directories a Tracker watches: past it, every
// look is a full one.
const trackMaxDirs = 4096

// trackMaxPaths bounds the paths one incremental look hands git (on its
// command line): past it, a full look.
const trackMaxPaths = 2000

// Track returns a Tracker of p's worktree. It reads nothing until its
// first Changes.
func (m *Manager) Track(p *Place) *Tracker {
	return &Tracker{m: m, p: *p, noWatch: m.host != ""}
}

// Looks counts the tracker's looks so far: full ones (a whole snapshot),
// incremental ones (the changed paths read again: by git, or new files
// alone by the tracker) and unchanged ones (no git).
func (t *Tracker) Looks() (full, incremental, unchanged int64) {
	return t.looks[0].Load(), t.looks[1].Load(), t.looks[2].Load()
}

// Changes returns the worktree's change against its base, as
// Manager.Changes does.
func (t *Tracker) Changes(ctx context.Context) ([]FileChange, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("workspace: the tracker is closed")
	}
	if t.watch != nil {
		rs, ok := t.readRefs()
		if ok && rs.key != t.refs.key {
			ok = t.rebase(ctx, rs)
		}
		if ok {
			files, ok, err := t.incremental(ctx)
			if err != nil {
				t.m.log.Debug("radar: an incremental look failed: a full one", "path", t.p.Path, "err", err)
			}
			if ok {
				return files, nil
			}
		}
	}
	return t.full(ctx)
}

// Close stops watching and ends the tracker's git processes; it removes
// the small index.
func (t *Tracker) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.reset()
}

// reset drops everything but what the tracker was made with.
func (t *Tracker) reset() {
	if t.watch != nil {
		t.watch.close()
		t.watch = nil
	}
	if t.ign != nil {
		t.ign.close()
		t.ign = nil
	}
	if t.dirs.gitDir != "" && t.m.host == "" {
		os.Remove(t.indexPath())
	}
	t.refs, t.rec, t.base, t.inIndex, t.paths, t.files = refState{}, record{}, "", nil, nil, nil
	t.gitFiles, t.fresh, t.plain, t.inBase = nil, nil, plainUnknown, nil
}

func (t *Tracker) indexPath() string { return filepath.Join(t.dirs.gitDir, "atm-radar.index") }

// full is a whole look: Changes, then the small index of its paths and a
// new watch (started before the snapshot: what changes during it is an
// event of the next look).
func (t *Tracker) full(ctx context.Context) ([]FileChange, error) {
	t.looks[0].Add(1)
	t.reset()
	if t.dirs.gitDir == "" {
		wt, err := t.m.checkoutOf(ctx, t.p.Path)
		if err != nil {
			return nil, err
		}
		lead, err := t.m.checkoutOf(ctx, t.p.Source)
		if err != nil {
			return nil, err
		}
		t.dirs = trackDirs{gitDir: wt.GitDir, common: wt.Common, leadGitDir: lead.GitDir}
	}
	var rs refState
	refsOK := false
	if !t.noWatch {
		rs, refsOK = t.readRefs() // this machine's files: not for a host
	}
	if refsOK {
		if err := t.startWatch(ctx); err != nil {
			t.m.log.Debug("radar: the worktree is not watched: every look is a full one", "path", t.p.Path, "err", err)
			t.noWatch = true
		}
	}
	rec, err := t.m.recordOfPlace(ctx, &t.p)
	if err != nil {
		return nil, err
	}
	s, err := t.m.snapshot(ctx, rec.Path)
	if err != nil {
		return nil, err
	}
	from, err := t.m.baseOf(ctx, *rec, s.head)
	if err != nil {
		return nil, err
	}
	files, sides, err := t.m.diffRaw(ctx, rec.Path, gitOpts{readOnly: true}, "diff-tree", []string{from, s.tree}, nil)
	if err != nil {
		return nil, err
	}
	if t.watch == nil {
		return files, nil
	}
	// The small index: the working state of the change's paths.
	var info strings.Builder
	t.inIndex, t.paths = map[string]bool{}, map[string]bool{}
	for i, f := range files {
		for _, k := range keys(f) {
			t.paths[k] = true
		}
		if f.Status != "D" {
			fmt.Fprintf(&info, "%s %s\t%s\x00", sides[i].mode, sides[i].oid, f.Path)
			t.inIndex[f.Path] = true
		}
	}
	if _, err := t.m.git.run(ctx, rec.Path, gitOpts{env: []string{"GIT_INDEX_FILE=" + t.indexPath()}, stdin: strings.NewReader(info.String())},
		"update-index", "-z", "--index-info"); err != nil {
		t.reset()
		return files, nil // this look stands; the next is a full one
	}
	t.refs, t.rec, t.base, t.files, t.gitFiles = rs, *rec, from, files, files
	return files, nil
}

// rebase takes in refs that moved (a commit of the agent, the lead's
// checkout, a merge's record): when the change's base is still the same
// commit, the working tree is all that matters and the tracker goes on;
// it reports false when a full look is needed. What the files told is
// not asked of git again (usually only the merge base is).
func (t *Tracker) rebase(ctx context.Context, rs refState) bool {
	rec := t.rec
	if rs.record == "" || rs.record != t.refs.record {
		r, err := t.m.recordOfPlace(ctx, &t.p)
		if err != nil {
			return false
		}
		rec = *r
	}
	head := rs.head
	if head == "" {
		h, err := t.m.git.out(ctx, t.p.Path, "rev-parse", "--verify", "HEAD")
		if err != nil {
			return false
		}
		head = h
	}
	var from string
	var err error
	if rs.lead != "" {
		from, err = t.m.baseWith(ctx, rec, head, rs.lead)
	} else {
		from, err = t.m.baseOf(ctx, rec, head)
	}
	if err != nil || from != t.base {
		return false
	}
	t.refs, t.rec = rs, rec
	return true
}

// startWatch watches the worktree, leaving out what git ignores there and
// nested repositories.
func (t *Tracker) startWatch(ctx context.Context) error {
	b, err := t.m.git.run(ctx, t.p.Path, gitOpts{readOnly: true}, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return err
	}
	ignored := map[string]bool{}
	for _, p := range splitNUL(b) {
		if d, ok := strings.CutSuffix(p, "/"); ok {
			ignored[d] = true
		}
	}
	w, err := newTreeWatch(t.p.Path, trackMaxDirs, func(rel string) bool {
		return ignored[rel] || present(filepath.Join(t.p.Path, filepath.FromSlash(rel), ".git"))
	})
	if err != nil {
		return err
	}
	t.watch = w
	return nil
}

// incremental is a look at what the watch saw change; ok false means a
// full look is needed.
func (t *Tracker) incremental(ctx context.Context) (files []FileChange, ok bool, err error) {
	ev := t.watch.drain()
	if ev.Lost {
		return nil, false, nil
	}
	if len(ev.Paths) == 0 {
		t.looks[2].Add(1)
		return t.files, true, nil
	}
	touched := map[string]bool{}
	for _, p := range ev.Paths {
		touched[p] = true
	}
	// New directories: watched unless ignored (or a nested repository),
	// and what they hold counts as changed.
	if len(ev.NewDirs) > 0 {
		ig, err := t.ignored(ctx, ev.NewDirs)
		if err != nil {
			return nil, false, err
		}
		for i, d := range ev.NewDirs {
			if ig[i] {
				delete(touched, d)
				continue
			}
			if present(filepath.Join(t.p.Path, filepath.FromSlash(d), ".git")) {
				return nil, false, nil
			}
			var skipErr error
			inside, err := t.watch.watchNew(d, func(rel string) bool {
				if present(filepath.Join(t.p.Path, filepath.FromSlash(rel), ".git")) {
					skipErr = errors.New("a nested repository")
					return true
				}
				r, err := t.ignored(ctx, []string{rel})
				if err != nil {
					skipErr = err
					return true
				}
				return r[0]
			})
			if err != nil || skipErr != nil {
				return nil, false, errors.Join(err, skipErr)
			}
			for _, f := range inside {
				touched[f] = true
			}
		}
	}
	// What each touched path is now: gone, a file or link, or a directory
	// (its files are listed above; itself is nothing to git). The small
	// index must hold every present path of the change, for the diff
	// below compares the base with the working tree through it: new
	// paths are added, paths gone are removed; a path it holds that was
	// only written needs nothing (git reads the file, its stat data
	// being stale).
	var update, unknown []string
	for p := range touched {
		base := p[strings.LastIndexByte(p, '/')+1:]
		if base == ".gitignore" || base == ".gitattributes" || strings.ContainsAny(p, "\n\x00") {
			return nil, false, nil
		}
		fi, err := os.Lstat(filepath.Join(t.p.Path, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			if t.inIndex[p] {
				update = append(update, p)
			}
		case err != nil:
			return nil, false, err
		case fi.IsDir():
			delete(touched, p)
		case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
			if !t.inIndex[p] {
				unknown = append(unknown, p)
			}
		default:
			delete(touched, p) // a socket, a fifo: git adds none
		}
	}
	sort.Strings(unknown)
	ig, err := t.ignored(ctx, unknown)
	if err != nil {
		return nil, false, err
	}
	var added []string // the new paths git would add
	for i, p := range unknown {
		if !ig[i] {
			added = append(added, p)
		}
	}
	gone := false // a path gone that git must tell (a deletion)
	for p := range touched {
		if present(filepath.Join(t.p.Path, filepath.FromSlash(p))) {
			continue
		}
		if _, ok := t.fresh[p]; ok {
			delete(t.fresh, p) // a new file gone again
		} else {
			gone = true
		}
	}
	// New files, and edits of the small index's paths: the new files told
	// without git, while nothing is deleted.
	if len(update) == 0 && !gone && (len(added) > 0 || len(t.fresh) > 0) {
		if told, ok := t.tellNew(ctx, added); ok {
			return t.withNew(ctx, touched, told)
		}
	}
	// git adds the new paths, and those told without it before.
	update = append(update, added...)
	for p := range t.fresh {
		update = append(update, p)
	}
	t.fresh = nil
	spec := map[string]bool{}
	for p := range t.paths {
		spec[p] = true
	}
	for p := range touched {
		spec[p] = true
	}
	if len(spec) > trackMaxPaths {
		return nil, false, nil
	}
	t.looks[1].Add(1)
	idx := "GIT_INDEX_FILE=" + t.indexPath()
	if len(update) > 0 {
		sort.Strings(update)
		in := strings.Join(update, "\x00") + "\x00"
		if _, err := t.m.git.run(ctx, t.p.Path, gitOpts{env: []string{idx}, stdin: strings.NewReader(in)},
			"update-index", "--add", "--remove", "-z", "--stdin"); err != nil {
			return nil, false, err
		}
		for _, p := range update {
			t.inIndex[p] = present(filepath.Join(t.p.Path, filepath.FromSlash(p)))
		}
	}
	paths := make([]string, 0, len(spec))
	for p := range spec {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	files, _, err = t.m.diffRaw(ctx, t.p.Path, gitOpts{readOnly: true, env: []string{idx, "GIT_LITERAL_PATHSPECS=1"}},
		"diff", []string{t.base}, paths)
	if err != nil {
		return nil, false, err
	}
	t.gitFiles = files
	t.setFiles()
	return t.files, true, nil
}

// ignored asks the tracker's check-ignore (started on first use).
func (t *Tracker) ignored(ctx context.Context, paths []string) ([]bool, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if t.ign == nil {
		t.ign = t.m.startIgnoreCheck(t.p.Path)
	}
	return t.ign.ignored(ctx, paths)
}

// diffRaw runs `git <cmd> -r -M -U0 <revs> -- <paths>` and reads the
// patch for line ranges: diff-tree of two trees, or `git diff <base>`,
// the base against the working tree through the index (git's porcelain
// diff: unlike diff-index it reads a file whose stat data is stale rather
// than report it changed; the -c options and flags hold off what a
// user's configuration could change in its output).
func (m *Manager) diffRaw(ctx context.Context, dir string, o gitOpts, cmd string, revs, paths []string) ([]FileChange, []blobSide, error) {
	args := []string{"-c", "core.quotePath=false", "-c", "diff.interHunkContext=0", "-c", "diff.noprefix=false",
		cmd, "-r", "-M", "-z", "--raw", "--numstat", "--no-color", "--no-ext-diff", "-p", "-U0"}
	if cmd == "diff" {
		args = append(args, "--no-textconv", "--no-relative", "--diff-algorithm=myers", "--ignore-submodules=none")
	}
	args = append(append(append(args, revs...), "--"), paths...)
	out, err := m.git.run(ctx, dir, o, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace: %s %s: %w", cmd, strings.Join(revs, " "), err)
	}
	files, sides, patch, err := parseDiffRaw(string(out))
	if err != nil {
		return nil, nil, err
	}
	addRanges(files, patch)
	return files, sides, nil
}
