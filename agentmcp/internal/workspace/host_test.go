package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeHost is a Runner for a Manager on a host (Config.Host) whose
// directories are this machine's, seen under another name: every path
// under real is fake to the Manager, a path of the same length that does
// not exist here. It translates the commands it runs (their directory,
// arguments, environment and input) from fake to real and their output
// back, so a Manager on the host works, and one file operation of the
// Manager's own on a path of the host (os.Stat, os.Remove…), which only
// a command may do there, fails as on a real remote host: the paths are
// not here.
type fakeHost struct {
	real, fake string
	calls      atomic.Int64
}

// newFakeHost is a fakeHost over a temporary directory of the test's.
func newFakeHost(t testing.TB) *fakeHost {
	t.Helper()
	real := tempDir(t)
	fake := "/atm-fake-host-"
	if len(real) <= len(fake) {
		t.Fatalf("the temporary directory %s is too short to fake", real)
	}
	fake += strings.Repeat("h", len(real)-len(fake))
	if _, err := os.Lstat(fake); err == nil {
		t.Fatalf("%s exists on this machine", fake)
	}
	return &fakeHost{real: real, fake: fake}
}

func (h *fakeHost) toReal(s string) string { return strings.ReplaceAll(s, h.fake, h.real) }
func (h *fakeHost) toFake(s string) string { return strings.ReplaceAll(s, h.real, h.fake) }

// local is the path on this machine of a path of the host.
func (h *fakeHost) local(p string) string {
	if !strings.HasPrefix(p, h.fake) {
		panic("not a path of the fake host: " + p)
	}
	return h.toReal(p)
}

// there is the path on the host of a path on this machine.
func (h *fakeHost) there(p string) string { return h.toFake(p) }

// Run implements Runner: a command's input is translated when it is
// given whole (not a pipe, which streams: a lock's, whose input is
// empty); its output when it is done, but for a pipe, which gets it as
// it comes (a line at a time is small enough not to split a path).
func (h *fakeHost) Run(ctx context.Context, c *Command) error {
	h.calls.Add(1)
	r := *c
	r.Dir = h.toReal(c.Dir)
	r.Args = make([]string, len(c.Args))
	for i, a := range c.Args {
		r.Args[i] = h.toReal(a)
	}
	r.Env = nil
	for _, e := range c.Env {
		r.Env = append(r.Env, h.toReal(e))
	}
	if c.Stdin != nil {
		if _, pipe := c.Stdin.(*io.PipeReader); !pipe {
			b, err := io.ReadAll(c.Stdin)
			if err != nil {
				return err
			}
			r.Stdin = strings.NewReader(h.toReal(string(b)))
		}
	}
	var outs []func()
	for _, w := range []*io.Writer{&r.Stdout, &r.Stderr} {
		if *w == nil {
			continue
		}
		if pw, pipe := (*w).(*io.PipeWriter); pipe {
			*w = writerFunc(func(b []byte) (int, error) {
				if _, err := pw.Write([]byte(h.toFake(string(b)))); err != nil {
					return 0, err
				}
				return len(b), nil
			})
			continue
		}
		dst := *w
		var buf bytes.Buffer
		*w = &buf
		outs = append(outs, func() { _, _ = dst.Write([]byte(h.toFake(buf.String()))) })
	}
	err := LocalRunner{}.Run(ctx, &r)
	for _, out := range outs {
		out()
	}
	return err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// newHostManager is a Manager on the fake host h, owned by owner (zero:
// this process), with ports there.
func newHostManager(t testing.TB, h *fakeHost, owner Owner) *Manager {
	t.Helper()
	ports, err := NewPorts(PortsConfig{Runner: h, Dir: h.there(filepath.Join(h.real, "ports")), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(context.Background(), Config{Host: "box", Runner: h, Owner: owner, Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// hostRepo is a repository on the fake host with one commit of files.
func hostRepo(t testing.TB, h *fakeHost, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(h.real, "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q")
	write(t, dir, files)
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "base")
	return dir
}

// TestOnAHost: a Manager whose checkouts are on a host does all a local
// one does, through its Runner only: worktrees made there (the
// .worktreeinclude copies, the setup, ports there), the writable roots,
// the change read there (a Tracker's whole looks), a merge into the
// lead's checkout there with a check run there, to a branch there, the
// lock taken over from a dead owner, the release removing a clean
// worktree and keeping a dirty one, the list. Every path it sees is the
// host's, which this machine does not have (fakeHost).
func TestOnAHost(t *testing.T) {
	checkNoLeaks(t)
	ctx := context.Background()
	h := newFakeHost(t)
	lead := hostRepo(t, h, map[string]string{"main.go": "package main\n", "shared.txt": "one\ntwo\nthree\n",
		".gitignore": ".env\n", ".worktreeinclude": ".env\n", "cmd/tool/tool.go": "package tool\n"})
	write(t, lead, map[string]string{".env": "TOKEN=1\n"})
	leadThere := h.there(lead)
	m := newHostManager(t, h, Owner{})
	if m.Host() != "box" {
		t.Fatalf("Host() = %q", m.Host())
	}

	// A worktree there, with its copies, its ports and its setup.
	alice, err := m.Create(ctx, Request{AgentID: "codex-alice", Identity: "alice", Cwd: filepath.Join(leadThere, "cmd", "tool"), Ports: 3,
		Setup: `echo "$ATM_WORKTREE $ATM_BRANCH $ATM_PORT_COUNT $ATM_SOURCE" > setup.out`})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got := map[string]any{"path": alice.Path, "cwd": alice.Cwd, "branch": alice.Branch, "source": alice.Source, "repo": alice.Repo,
		"copied": alice.Copied, "ports": alice.Ports.Count, "lock": lockOf(t, lead, h.local(alice.Path)),
		"setup": read(t, filepath.Join(h.local(alice.Path), "setup.out"))}
	want := map[string]any{"path": leadThere + "/.atm/worktrees/alice", "cwd": leadThere + "/.atm/worktrees/alice/cmd/tool",
		"branch": "atm/alice", "source": leadThere, "repo": leadThere + "/.git", "copied": []string{".env"}, "ports": 3,
		"lock":  lockReason("codex-alice", m.owner) + "|locked",
		"setup": fmt.Sprintf("%s/.atm/worktrees/alice atm/alice 3 %s\n", lead, lead)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the worktree there (-want +got):\n%s", diff)
	}
	if ex := read(t, filepath.Join(lead, ".git/info/exclude")); !strings.Contains(ex, "/.atm/worktrees/\n") {
		t.Errorf("info/exclude there lacks our folders:\n%s", ex)
	}
	if recs, _ := filepath.Glob(filepath.Join(h.real, "ports", "*.json")); len(recs) != 1 {
		t.Errorf("port records there: %q, want one", recs)
	}
	roots, err := m.WritableRoots(ctx, alice)
	if err != nil || len(roots) != 4 {
		t.Fatalf("WritableRoots = %q, %v", roots, err)
	}
	for _, r := range roots {
		if fi, err := os.Stat(h.local(r)); err != nil || !fi.IsDir() {
			t.Errorf("writable root %s there: %v", r, err)
		}
	}

	// Its change, committed and not, read there; the Tracker's looks are
	// whole ones.
	aw := h.local(alice.Path)
	write(t, aw, map[string]string{"alice.txt": "alice\n"})
	run(t, aw, "add", "alice.txt")
	run(t, aw, "commit", "-q", "-m", "alice adds")
	write(t, aw, map[string]string{"shared.txt": "one\nALICE\nthree\n", "untracked.txt": "u\n"})
	d, err := m.Diff(ctx, DiffRequest{Place: alice, Stat: true})
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if d.Stat != (DiffStat{Files: 4, Added: 4, Removed: 1}) || !d.Uncommitted { // setup.out too
		t.Errorf("Diff = %+v, want 4 files, +4 -1, uncommitted", d.Stat)
	}
	tr := m.Track(alice)
	for i := 0; i < 2; i++ {
		files, err := tr.Changes(ctx)
		if err != nil {
			t.Fatalf("Tracker.Changes: %v", err)
		}
		want, err := m.Changes(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, files); diff != "" {
			t.Errorf("the Tracker's change (-Changes +Tracker):\n%s", diff)
		}
	}
	if full, inc, none := tr.Looks(); full != 2 || inc != 0 || none != 0 {
		t.Errorf("looks = %d full, %d incremental, %d unchanged; want whole looks only on a host", full, inc, none)
	}
	tr.Close()

	// Merged into the lead's checkout there, a check run there.
	res, err := m.Merge(ctx, MergeRequest{Place: alice, Strategy: Squash, Message: "alice's work", Check: `test -f alice.txt && test "$ATM_CHECK" = 1`,
		Author: Signature{Name: "alice", Email: "alice@dev"}})
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if !res.Check.Passed() || res.LeadBranch != "main" {
		t.Errorf("merge result %+v", res)
	}
	if s := read(t, filepath.Join(lead, "shared.txt")); s != "one\nALICE\nthree\n" || run(t, lead, "status", "--porcelain") != "" {
		t.Errorf("the lead's checkout there after the merge: shared.txt %q, status %q", s, run(t, lead, "status", "--porcelain"))
	}
	if checks, _ := os.ReadDir(filepath.Join(lead, ChecksDir)); len(checks) != 0 {
		t.Errorf("check worktrees left there: %v", checks)
	}
	// Merged, its worktree is clean against its new base: removed.
	if r, err := m.Release(ctx, alice, false); err != nil || !r.Removed {
		t.Errorf("Release of the merged worktree = %+v, %v; want it removed", r, err)
	}
	if exists(aw) {
		t.Errorf("%s is still there", aw)
	}

	// bob's work goes to a branch there; the lead's checkout stays.
	bob, err := m.Create(ctx, Request{AgentID: "codex-bob", Identity: "bob", Cwd: leadThere})
	if err != nil {
		t.Fatal(err)
	}
	write(t, h.local(bob.Path), map[string]string{"bob.txt": "bob\n"})
	before := leadState(t, lead)
	res, err = m.Merge(ctx, MergeRequest{Place: bob, Strategy: Squash, Message: "bob's work", ToBranch: true,
		Author: Signature{Name: "bob", Email: "bob@dev"}})
	if err != nil || res.Branch != "atm-pr/bob" {
		t.Fatalf("Merge to a branch = %+v, %v", res, err)
	}
	if run(t, lead, "show", "atm-pr/bob:bob.txt") != "bob" || leadState(t, lead) != before {
		t.Errorf("the branch there lacks bob.txt, or the lead's checkout moved")
	}

	// Its serve "dies" (a dead owner's lock); another takes it over.
	dead := deadOwner(t)
	if _, err := m.git.out(ctx, leadThere, "worktree", "unlock", bob.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := m.git.out(ctx, leadThere, "worktree", "lock", "--reason", lockReason("codex-bob", dead), bob.Path); err != nil {
		t.Fatal(err)
	}
	back, err := m.Reenter(ctx, "codex-bob", leadThere, 2)
	if err != nil || back.Path != bob.Path || !back.Resumed || back.Ports.Count != 2 {
		t.Fatalf("Reenter = %+v, %v", back, err)
	}
	if l := lockOf(t, lead, h.local(bob.Path)); l != lockReason("codex-bob", m.owner)+"|locked" {
		t.Errorf("lock after the takeover: %q", l)
	}
	// A live owner's is refused.
	carol := newHostManager(t, h, liveOwner(t))
	if _, err := carol.Reenter(ctx, "codex-bob", leadThere, 0); !errors.Is(err, ErrOwned) {
		t.Errorf("Reenter of a worktree a live serve holds: %v, want ErrOwned", err)
	}

	// Listed there (its work committed on its branch by the merge, and
	// more since); kept at its release.
	write(t, h.local(bob.Path), map[string]string{"bob2.txt": "more\n"})
	wts, err := m.List(ctx, leadThere)
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != 1 || wts[0].Name != "bob" || wts[0].State != Live || wts[0].Dirty != 1 || wts[0].Ahead != 1 {
		t.Errorf("List = %+v, want bob live, one commit ahead and dirty", wts)
	}
	r, err := m.Release(ctx, back, false)
	if err != nil || r.Removed || r.Dirty != 1 || r.Ahead != 1 {
		t.Errorf("Release of a dirty worktree = %+v, %v; want it kept", r, err)
	}
	if !exists(filepath.Join(h.local(bob.Path), "bob.txt")) {
		t.Error("the kept worktree's work is gone")
	}
	if recs, _ := filepath.Glob(filepath.Join(h.real, "ports", "*.json")); len(recs) != 0 {
		t.Errorf("port records left there: %q", recs)
	}
	if h.calls.Load() == 0 {
		t.Error("nothing ran on the host")
	}
}

// TestOnAHostRefuses: on a host as here, a worktree location through a
// symbolic link is refused, and so are a cwd outside git and a missing
// one.
func TestOnAHostRefuses(t *testing.T) {
	ctx := context.Background()
	h := newFakeHost(t)
	lead := hostRepo(t, h, map[string]string{"a.txt": "a\n"})
	m := newHostManager(t, h, Owner{})
	elsewhere := filepath.Join(h.real, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, Request{AgentID: "codex-x", Identity: "x", Cwd: h.there(elsewhere)}); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Create outside git: %v, want ErrNotRepository", err)
	}
	if _, err := m.Create(ctx, Request{AgentID: "codex-x", Identity: "x", Cwd: h.there(filepath.Join(h.real, "nowhere"))}); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
	if err := os.Symlink(elsewhere, filepath.Join(lead, ".atm")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, Request{AgentID: "codex-x", Identity: "x", Cwd: h.there(lead)}); !errors.Is(err, ErrSymlink) {
		t.Errorf("Create through a linked .atm: %v, want ErrSymlink", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("something was made through the link: %v", ents)
	}
}

// TestShFilesLock: the lock of a host's files (flock(1) there) and this
// machine's (gofrs/flock) are one lock: each waits for the other.
func TestShFilesLock(t *testing.T) {
	checkNoLeaks(t)
	ctx := context.Background()
	path := filepath.Join(tempDir(t), "atm-owner.lock")
	for _, tt := range []struct {
		name          string
		first, second files
	}{
		{"host then local", shFiles{r: LocalRunner{}}, localFiles{}},
		{"local then host", localFiles{}, shFiles{r: LocalRunner{}}},
		{"host then host", shFiles{r: LocalRunner{}}, shFiles{r: LocalRunner{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			unlock, err := tt.first.lock(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan func(), 1)
			go func() {
				u, err := tt.second.lock(ctx, path)
				if err != nil {
					t.Error(err)
				}
				got <- u
			}()
			select {
			case u := <-got:
				u()
				t.Fatal("the second lock was taken while the first was held")
			case <-time.After(300 * time.Millisecond):
			}
			unlock()
			select {
			case u := <-got:
				if u != nil {
					u()
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the second lock was not taken after the first was let go")
			}
		})
	}
	// A lock whose context ends while it waits gives up.
	unlock, err := localFiles{}.lock(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := (shFiles{r: LocalRunner{}}).lock(short, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a lock that waited past its context: %v", err)
	}
}

// TestShFiles: each file operation of a host answers as this machine's
// does, on the same files.
func TestShFiles(t *testing.T) {
	ctx := context.Background()
	dir := tempDir(t)
	write(t, dir, map[string]string{"top/f.txt": "hello\n", "top/sub/g.txt": "g\n", "top/x": "exec\n", "wt/there.txt": "mine\n"})
	if err := os.Chmod(filepath.Join(dir, "top/x"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "top"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"local", "host"} {
		fs := files(localFiles{})
		if name == "host" {
			fs = shFiles{r: LocalRunner{}}
		}
		t.Run(name, func(t *testing.T) {
			type result struct {
				Real                     string
				IsDir, Regular, Exists   []bool
				Read                     string
				ReadMissing              bool
				Copied                   []string
				Skipped                  []string
				CopiedX                  string
				Written                  string
				WrittenMode              os.FileMode
				SafeDirsLink, SafeDirsOK bool
			}
			var got result
			var err error
			if got.Real, err = fs.realDir(ctx, filepath.Join(dir, "link", "sub")); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"top", "link", "top/f.txt", "dangling", "none"} {
				got.IsDir = append(got.IsDir, fs.isDir(ctx, filepath.Join(dir, p)))
				r, _ := fs.isRegular(ctx, filepath.Join(dir, p))
				got.Regular = append(got.Regular, r)
				e, _ := fs.exists(ctx, filepath.Join(dir, p))
				got.Exists = append(got.Exists, e)
			}
			b, err := fs.readFile(ctx, filepath.Join(dir, "top/f.txt"))
			got.Read = string(b)
			if err != nil {
				t.Fatal(err)
			}
			_, err = fs.readFile(ctx, filepath.Join(dir, "none"))
			got.ReadMissing = errors.Is(err, os.ErrNotExist)
			wt := filepath.Join(dir, "wt-"+name)
			if err := os.MkdirAll(wt, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, wt, map[string]string{"f.txt": "already\n"})
			got.Copied, err = fs.copyIncluded(ctx, filepath.Join(dir, "top"), wt, []string{"f.txt", "sub/g.txt", "x", "sub", "none"},
				func(rel string) { got.Skipped = append(got.Skipped, rel) })
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(wt, "x")); err == nil {
				got.CopiedX = fi.Mode().Perm().String() + " " + read(t, filepath.Join(wt, "x"))
			}
			p := filepath.Join(wt, "info", "exclude")
			if err := fs.mkdirAll(ctx, filepath.Dir(p)); err != nil {
				t.Fatal(err)
			}
			if err := fs.writeFileAtomic(ctx, p, []byte("a\nb\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got.Written = read(t, p)
			if fi, err := os.Stat(p); err == nil {
				got.WrittenMode = fi.Mode().Perm()
			}
			if err := os.Symlink(dir, filepath.Join(wt, "l")); err != nil {
				t.Fatal(err)
			}
			got.SafeDirsLink = errors.Is(fs.safeDirs(ctx, wt, "l/x"), ErrSymlink)
			got.SafeDirsOK = fs.safeDirs(ctx, wt, "a/b/c") == nil && exists(filepath.Join(wt, "a/b/c"))
			want := result{Real: filepath.Join(dir, "top", "sub"), IsDir: []bool{true, true, false, false, false},
				Regular: []bool{false, false, true, false, false}, Exists: []bool{true, true, true, true, false},
				Read: "hello\n", ReadMissing: true, Copied: []string{"sub/g.txt", "x"}, Skipped: []string{"sub", "none"},
				CopiedX: "-rwxr-x--- exec\n", Written: "a\nb\n", WrittenMode: 0o644, SafeDirsLink: true, SafeDirsOK: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// A snapshot's index: copied, installed, removed.
			idx, err := fs.tempCopy(ctx, wt, filepath.Join(dir, "top/f.txt"))
			if err != nil || read(t, idx) != "hello\n" || filepath.Dir(idx) != wt {
				t.Fatalf("tempCopy = %s, %v", idx, err)
			}
			empty, err := fs.tempCopy(ctx, wt, filepath.Join(dir, "none"))
			if err != nil || read(t, empty) != "" {
				t.Fatalf("tempCopy of nothing = %s, %v", empty, err)
			}
			real := filepath.Join(wt, "index")
			if err := fs.installIndex(ctx, idx, real); err != nil || read(t, real) != "hello\n" || exists(real+".lock") {
				t.Errorf("installIndex: %v", err)
			}
			write(t, wt, map[string]string{"index.lock": "held\n"})
			if err := fs.installIndex(ctx, empty, real); err == nil || read(t, real) != "hello\n" {
				t.Errorf("installIndex while the index is locked: %v", err)
			}
			for _, f := range []string{idx, empty, filepath.Join(dir, "none")} {
				if err := fs.remove(ctx, f); err != nil {
					t.Errorf("remove %s: %v", f, err)
				}
			}
			if exists(empty) {
				t.Error("remove left the file")
			}
		})
	}
}

// TestHostPorts: ports reserved on a host are records in the directory
// there, in the format of this machine's: a serve there (local Ports on
// the same directory) sees them, and they see its; two owners get two
// blocks; a dead owner's block of this user is taken back; a release
// removes the record.
func TestHostPorts(t *testing.T) {
	h := newFakeHost(t)
	dir := filepath.Join(h.real, "ports")
	first, last := freeRange(t, 30)
	a, err := NewPorts(PortsConfig{Runner: h, Dir: h.there(dir), First: first, Last: last})
	if err != nil {
		t.Fatal(err)
	}
	other := liveOwner(t)
	b, err := NewPorts(PortsConfig{Runner: h, Dir: h.there(dir), First: first, Last: last, Owner: other})
	if err != nil {
		t.Fatal(err)
	}
	there, err := NewPorts(PortsConfig{Dir: dir, First: first, Last: last, Owner: liveOwner(t)}) // a serve on the host
	if err != nil {
		t.Fatal(err)
	}
	ba, err := a.Reserve(10, "codex-a")
	if err != nil {
		t.Fatal(err)
	}
	bt, err := there.Reserve(10, "codex-there")
	if err != nil {
		t.Fatal(err)
	}
	bb, err := b.Reserve(10, "codex-b")
	if err != nil {
		t.Fatal(err)
	}
	if got := []PortBlock{ba, bt, bb}; !slices.Equal(got, []PortBlock{{first, 10}, {first + 10, 10}, {first + 20, 10}}) {
		t.Errorf("blocks %v, want three in a row", got)
	}
	live, err := there.List()
	if err != nil || len(live) != 3 {
		t.Errorf("the serve there lists %v, %v; want all three", live, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the directory there: %v, %v", fi, err)
	}
	// b's owner dies: its block is taken back by the next reservation.
	deadB, err := NewPorts(PortsConfig{Runner: h, Dir: h.there(dir), First: first, Last: last, Owner: deadOwner(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ba); err != nil {
		t.Fatal(err)
	}
	bd, err := deadB.Reserve(10, "codex-dead")
	if err != nil || bd != ba {
		t.Fatalf("a reservation after a release = %v, %v; want %v", bd, err, ba)
	}
	again, err := a.Reserve(10, "codex-a2")
	if err != nil || again != ba {
		t.Errorf("the dead owner's block = %v, %v; want it taken back: %v", again, err, ba)
	}
	live, err = a.List()
	if err != nil || len(live) != 3 {
		t.Errorf("List on the host = %v, %v; want three", live, err)
	}
	if _, err := a.Reserve(10, "codex-full"); err == nil {
		t.Error("a full range gave a block")
	}
}
