package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGitVersion(t *testing.T) {
	tests := []struct {
		in   string
		want [2]int
		ok   bool
	}{
		{"git version 2.39.5", [2]int{2, 39}, true},
		{"git version 2.39.3 (Apple Git-146)", [2]int{2, 39}, true},
		{"git version 2.45.1.windows.1", [2]int{2, 45}, true},
		{"git version 2.37.0", [2]int{2, 37}, false},
		{"git version 3.0", [2]int{3, 0}, true},
		{"hub version 2.14", [2]int{}, false},
	}
	for _, tt := range tests {
		got, err := parseGitVersion(tt.in)
		if ok := err == nil && versionOK(got); got != tt.want || ok != tt.ok {
			t.Errorf("parseGitVersion(%q) = %v, ok %v; want %v, ok %v (err %v)", tt.in, got, ok, tt.want, tt.ok, err)
		}
	}
}

func TestNewRefusesAnOldGit(t *testing.T) {
	_, err := New(context.Background(), Config{Runner: fakeVersion("git version 2.30.1\n")})
	if !errors.Is(err, ErrGitTooOld) {
		t.Fatalf("New with git 2.30: %v, want ErrGitTooOld", err)
	}
}

// fakeVersion is a Runner whose git says it is the given version.
type fakeVersion string

func (f fakeVersion) Run(_ context.Context, c *Command) error {
	_, err := c.Stdout.Write([]byte(f))
	return err
}

func TestCreate(t *testing.T) {
	checkNoLeaks(t)
	repo := newRepo(t, map[string]string{"main.go": "package main\n", "cmd/tool/tool.go": "package tool\n"})
	m := newManager(t, Owner{})
	ctx := context.Background()
	p, err := m.Create(ctx, Request{AgentID: "codex-01alice", Identity: "alice", Team: "t", Cwd: filepath.Join(repo, "cmd", "tool"), Ports: 10})
	if err != nil {
		t.Fatal(err)
	}
	head := run(t, repo, "rev-parse", "HEAD")
	got := map[string]any{"name": p.Name, "path": p.Path, "cwd": p.Cwd, "branch": p.Branch, "base": p.Base, "base_ref": p.BaseRef,
		"source": p.Source, "repo": p.Repo, "ports": p.Ports.Count, "wt_branch": run(t, p.Path, "symbolic-ref", "--short", "HEAD"),
		"wt_head": run(t, p.Path, "rev-parse", "HEAD"), "lead_status": run(t, repo, "status", "--porcelain", "--untracked-files=all"),
		"lock": lockOf(t, repo, p.Path), "records": refs(t, repo, "refs/atm/")}
	want := map[string]any{"name": "alice", "path": filepath.Join(repo, ".atm/worktrees/alice"),
		"cwd": filepath.Join(repo, ".atm/worktrees/alice/cmd/tool"), "branch": "atm/alice", "base": head, "base_ref": "HEAD",
		"source": repo, "repo": filepath.Join(repo, ".git"), "ports": 10, "wt_branch": "atm/alice", "wt_head": head, "lead_status": "",
		"lock": lockReason("codex-01alice", m.owner) + "|locked", "records": []string{"refs/atm/worktrees/alice"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created worktree (-want +got):\n%s", diff)
	}
	if ex := read(t, filepath.Join(repo, ".git/info/exclude")); !strings.Contains(ex, "/.atm/worktrees/\n") || !strings.Contains(ex, "/.atm/checks/\n") {
		t.Errorf("info/exclude lacks our folders:\n%s", ex)
	}
	if _, err := os.Stat(filepath.Join(repo, ".gitignore")); err == nil {
		t.Error("a .gitignore was written")
	}
	env := strings.Join(p.Env(), " ")
	for _, w := range []string{"ATM_WORKTREE=" + p.Path, "ATM_BRANCH=atm/alice", "ATM_PORT_BASE=" + strconv.Itoa(p.Ports.Base), "ATM_PORT_COUNT=10"} {
		if !strings.Contains(env, w) {
			t.Errorf("Env() = %s, lacks %s", env, w)
		}
	}
	if _, err := m.Release(ctx, p, false); err != nil {
		t.Fatal(err)
	}
}

func TestCreateFromBase(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	first := run(t, repo, "rev-parse", "HEAD")
	write(t, repo, map[string]string{"a.txt": "two\n"})
	commitAll(t, repo, "two")
	run(t, repo, "branch", "old", first)
	m := newManager(t, Owner{})
	p, err := m.Create(context.Background(), Request{AgentID: "codex-b", Identity: "bob", Cwd: repo, Base: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Base != first || p.BaseRef != "old" || read(t, filepath.Join(p.Path, "a.txt")) != "one\n" {
		t.Errorf("base %s (%s), a.txt %q; want %s from old, \"one\"", p.Base, p.BaseRef, read(t, filepath.Join(p.Path, "a.txt")), first)
	}
	if up, err := tryGit(p.Path, "rev-parse", "--abbrev-ref", "@{upstream}"); err == nil {
		t.Errorf("the branch tracks %s", up)
	}
}

func TestCreateRefuses(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(t *testing.T) string // returns the cwd
		want    error
	}{
		{"outside git", func(t *testing.T) string { return tempDir(t) }, ErrNotRepository},
		{"inside .git", func(t *testing.T) string { return filepath.Join(newRepo(t, map[string]string{"a": "a"}), ".git") }, ErrNotRepository},
		{"no commit", func(t *testing.T) string {
			d := tempDir(t)
			run(t, d, "init", "-q")
			return d
		}, ErrNoCommits},
		{".atm is a symbolic link", func(t *testing.T) string {
			repo := newRepo(t, map[string]string{"a": "a"})
			outside := tempDir(t)
			if err := os.Symlink(outside, filepath.Join(repo, ".atm")); err != nil {
				t.Fatal(err)
			}
			return repo
		}, ErrSymlink},
		{".atm/worktrees is a committed symbolic link", func(t *testing.T) string {
			repo := newRepo(t, map[string]string{"a": "a"})
			os.Mkdir(filepath.Join(repo, ".atm"), 0o755)
			if err := os.Symlink("/tmp", filepath.Join(repo, ".atm/worktrees")); err != nil {
				t.Fatal(err)
			}
			commitAll(t, repo, "link")
			return repo
		}, ErrSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := tt.prepare(t)
			m := newManager(t, Owner{})
			_, err := m.Create(ctx, Request{AgentID: "codex-x", Identity: "x", Cwd: cwd})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Create: %v, want %v", err, tt.want)
			}
			if top, gerr := tryGit(cwd, "rev-parse", "--show-toplevel"); gerr == nil {
				if r := refs(t, top, "refs/atm/"); r != nil {
					t.Errorf("records left: %v", r)
				}
				if b := run(t, top, "branch", "--list", "atm/*"); b != "" {
					t.Errorf("branches left: %s", b)
				}
			}
		})
	}
}

func TestCreateUniqueNames(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a\n"})
	// Not ours: a branch named like ours, and a worktree of the user's in
	// our folder.
	run(t, repo, "branch", "atm/carol")
	run(t, repo, "worktree", "add", "-q", "-b", "user-wt", filepath.Join(repo, ".atm/worktrees/dave"))
	m := newManager(t, Owner{})
	ctx := context.Background()
	var names []string
	for _, id := range []string{"alice", "alice", "carol", "dave", "Eve Smith/../x", "...", "alice"} {
		p, err := m.Create(ctx, Request{AgentID: "codex-" + strconv.Itoa(len(names)), Identity: id, Cwd: repo})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name+" "+p.Branch)
		if len(names) == 2 {
			write(t, p.Path, map[string]string{"work.txt": "kept\n"})
			if r, err := m.Release(ctx, p, false); err != nil || r.Removed {
				t.Fatalf("release of a dirty worktree: %+v, %v", r, err)
			}
		}
	}
	want := []string{"alice atm/alice", "alice-2 atm/alice-2", "carol-2 atm/carol-2", "dave-2 atm/dave-2",
		"Eve-Smith-.-x atm/Eve-Smith-.-x", "agent atm/agent", "alice-3 atm/alice-3"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if got := run(t, repo, "rev-parse", "--abbrev-ref", "user-wt"); got != "user-wt" || lockOf(t, repo, filepath.Join(repo, ".atm/worktrees/dave")) != "" {
		t.Error("the user's worktree was touched")
	}
}

func TestWorktreeInclude(t *testing.T) {
	repo := newRepo(t, map[string]string{
		".gitignore":       ".env\n*.local\nnode_modules/\nbuild/\nsecret-link\n",
		".worktreeinclude": "# comment\n.env\n**/*.local\nconfig.json\nnotes.txt\nsecret-link\n!skip.local\n",
		"config.json":      "tracked\n",
	})
	write(t, repo, map[string]string{
		".env":                  "TOKEN=1\n",
		"web/app.local":         "local\n",
		"skip.local":            "negated\n",
		"notes.txt":             "untracked, not ignored\n",
		"node_modules/pkg/x.js": "ignored, not listed\n",
		"build/out.bin":         "ignored, not listed\n",
		"config.json":           "tracked, modified\n",
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(repo, "secret-link")); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Owner{})
	p := place(t, m, repo, "alice", "")
	if diff := cmp.Diff([]string{".env", "web/app.local"}, p.Copied); diff != "" {
		t.Errorf("copied (-want +got):\n%s", diff)
	}
	got := map[string]bool{}
	for _, f := range []string{".env", "web/app.local", "skip.local", "notes.txt", "node_modules/pkg/x.js", "build/out.bin", "secret-link"} {
		got[f] = exists(filepath.Join(p.Path, f))
	}
	want := map[string]bool{".env": true, "web/app.local": true}
	for f := range got {
		if !want[f] {
			want[f] = false
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files in the worktree (-want +got):\n%s", diff)
	}
	if c := read(t, filepath.Join(p.Path, "config.json")); c != "tracked\n" {
		t.Errorf("config.json = %q: a tracked file was overwritten", c)
	}
	// Copies are ignored: they neither make the worktree dirty nor keep it.
	r, err := m.Release(context.Background(), p, false)
	if err != nil || !r.Removed {
		t.Errorf("release of a worktree holding only copies: %+v, %v", r, err)
	}
}

func TestSetup(t *testing.T) {
	ctx := context.Background()
	t.Run("passes", func(t *testing.T) {
		repo := newRepo(t, map[string]string{"a": "a\n"})
		m := newManager(t, Owner{})
		p, err := m.Create(ctx, Request{AgentID: "codex-s", Identity: "s", Cwd: repo, Ports: 3,
			Setup: `echo "in $(pwd) on $ATM_BRANCH ports $ATM_PORT_BASE+$ATM_PORT_COUNT from $ATM_SOURCE"; echo setup > made-by-setup.txt`})
		if err != nil {
			t.Fatal(err)
		}
		want := "in " + p.Path + " on atm/s ports " + strconv.Itoa(p.Ports.Base) + "+3 from " + repo + "\n"
		if p.SetupTail != want || read(t, filepath.Join(p.Path, "made-by-setup.txt")) != "setup\n" {
			t.Errorf("setup tail %q, want %q", p.SetupTail, want)
		}
	})
	t.Run("fails and leaves nothing", func(t *testing.T) {
		repo := newRepo(t, map[string]string{"a": "a\n"})
		m := newManager(t, Owner{})
		_, err := m.Create(ctx, Request{AgentID: "codex-s", Identity: "s", Cwd: repo, Ports: 3,
			Setup: `mkdir -p node_modules/x && echo installing; echo "npm ERR! boom" >&2; exit 3`})
		var se *SetupError
		if !errors.As(err, &se) || !errors.Is(err, ErrSetup) {
			t.Fatalf("Create: %v, want a SetupError", err)
		}
		if se.Result.ExitCode != 3 || se.Result.Tail != "installing\nnpm ERR! boom\n" {
			t.Errorf("setup result %+v", se.Result)
		}
		got := []any{exists(filepath.Join(repo, ".atm/worktrees/s")), run(t, repo, "branch", "--list", "atm/*"),
			refs(t, repo, "refs/atm/"), run(t, repo, "worktree", "list", "--porcelain") == "worktree "+repo+"\nHEAD "+run(t, repo, "rev-parse", "HEAD")+"\nbranch refs/heads/main"}
		if diff := cmp.Diff([]any{false, "", []string(nil), true}, got); diff != "" {
			t.Errorf("left behind (-want +got):\n%s", diff)
		}
		if rs, _ := m.ports.List(); len(rs) != 0 {
			t.Errorf("ports still reserved: %v", rs)
		}
	})
}

func TestRelease(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		change  func(t *testing.T, wt string)
		removed bool
		ahead   int
		dirty   int
		stat    DiffStat
	}{
		{"untouched", func(*testing.T, string) {}, true, 0, 0, DiffStat{}},
		{"only an ignored file", func(t *testing.T, wt string) { write(t, wt, map[string]string{"out.log": "x"}) }, true, 0, 0, DiffStat{}},
		{"modified", func(t *testing.T, wt string) { write(t, wt, map[string]string{"a.txt": "one\nTWO\n"}) }, false, 0, 1, DiffStat{1, 1, 0}},
		{"staged", func(t *testing.T, wt string) {
			write(t, wt, map[string]string{"a.txt": "changed\n"})
			run(t, wt, "add", "a.txt")
		}, false, 0, 1, DiffStat{1, 1, 1}},
		{"untracked", func(t *testing.T, wt string) { write(t, wt, map[string]string{"new.go": "x\ny\n"}) }, false, 0, 1, DiffStat{1, 2, 0}},
		{"committed", func(t *testing.T, wt string) {
			write(t, wt, map[string]string{"b.txt": "b\n"})
			commitAll(t, wt, "b")
		}, false, 1, 0, DiffStat{1, 1, 0}},
		{"committed and reverted", func(t *testing.T, wt string) {
			write(t, wt, map[string]string{"b.txt": "b\n"})
			commitAll(t, wt, "b")
			run(t, wt, "reset", "-q", "--hard", "HEAD~1")
		}, true, 0, 0, DiffStat{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{"a.txt": "one\n", ".gitignore": "*.log\n"})
			m := newManager(t, Owner{})
			p := place(t, m, repo, "alice", "")
			tt.change(t, p.Path)
			r, err := m.Release(ctx, p, false)
			if err != nil {
				t.Fatal(err)
			}
			want := Released{Removed: tt.removed, Path: p.Path, Branch: "atm/alice", Ahead: tt.ahead, Dirty: tt.dirty, Stat: tt.stat}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("Release (-want +got):\n%s", diff)
			}
			gone := !exists(p.Path) && run(t, repo, "branch", "--list", "atm/alice") == "" && refs(t, repo, "refs/atm/") == nil
			if gone != tt.removed {
				t.Errorf("worktree, branch and record gone: %v, want %v", gone, tt.removed)
			}
			if !tt.removed && lockOf(t, repo, p.Path) != "" {
				t.Error("a kept worktree is still locked")
			}
		})
	}
}

func TestReenter(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		owner func(t testing.TB) Owner // the first session's serve
		want  error
	}{
		{"owner killed: resumable", deadOwner, nil},
		{"owner alive: refused", liveOwner, ErrOwned},
		{"same serve", func(testing.TB) Owner { return Self() }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "b\n"})
			first := newManager(t, tt.owner(t))
			p := place(t, first, repo, "alice", "sub")
			write(t, p.Path, map[string]string{"a.txt": "unsaved\n"})
			second := newManager(t, Owner{})
			q, err := second.Place(ctx, Request{AgentID: p.AgentID, Identity: "alice", Cwd: filepath.Join(repo, "sub"), Ports: 2})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Place: %v, want %v", err, tt.want)
			}
			if err != nil {
				if lockOf(t, repo, p.Path) != lockReason(p.AgentID, first.owner)+"|locked" {
					t.Error("a refused resume changed the lock")
				}
				return
			}
			got := []any{q.Path, q.Cwd, q.Branch, q.Resumed, q.Ports.Count, lockOf(t, repo, p.Path), read(t, filepath.Join(q.Path, "a.txt"))}
			want := []any{p.Path, filepath.Join(p.Path, "sub"), "atm/alice", true, 2, lockReason(p.AgentID, second.owner) + "|locked", "unsaved\n"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("re-entered (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReenterUnknownAgentCreates(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	m := newManager(t, Owner{})
	if _, err := m.Reenter(context.Background(), "codex-nobody", repo, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Reenter of an unknown agent: %v, want ErrNotFound", err)
	}
	p, err := m.Place(context.Background(), Request{AgentID: "codex-new", Identity: "new", Cwd: repo})
	if err != nil || p.Resumed || p.Branch != "atm/new" {
		t.Fatalf("Place of a new agent: %+v, %v", p, err)
	}
}
