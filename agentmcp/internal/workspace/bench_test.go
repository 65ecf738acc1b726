package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The speed targets of issues 39 and 40, as benchmarks (never timed
// tests): a worktree of a 10,000-file repository ready, .worktreeinclude
// copies included, under 1 s; the radar's cost per ended turn with 20 live
// worktrees under 5 ms; a diff and a conflict-free merge (no check) of a
// 50-file change in a 10,000-file repository under 300 ms each.

// bigRepo makes (once per test binary) a repository of n files in 100
// folders, with five git-ignored files that .worktreeinclude names.
var bigRepos sync.Map // n → dir

func bigRepo(b testing.TB, n int) string {
	b.Helper()
	if d, ok := bigRepos.Load(n); ok {
		return d.(string)
	}
	dir, err := os.MkdirTemp("", "workspace-bench-")
	if err != nil {
		b.Fatal(err)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	repo := filepath.Join(dir, "repo")
	os.Mkdir(repo, 0o755)
	run(b, repo, "init", "-q")
	var body strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&body, "// line %d of a Go file of moderate size, as real code has\n", i)
	}
	for i := range n {
		d := filepath.Join(repo, fmt.Sprintf("pkg%03d", i%100))
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%05d.go", i)), []byte("package p\n"+body.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(b, repo, map[string]string{".gitignore": ".env\n*.local\n", ".worktreeinclude": ".env\n**/*.local\n"})
	commitAll(b, repo, "base")
	write(b, repo, map[string]string{".env": "TOKEN=1\n", "a.local": "x\n", "pkg001/b.local": "y\n", "pkg002/c.local": "z\n",
		"pkg003/d.local": "w\n"})
	bigRepos.Store(n, repo)
	return repo
}

// cleanups run after all tests and benchmarks (TestMain).
var cleanups []func()

// BenchmarkCreate is a worktree ready for a session, .worktreeinclude
// copies included: for a small repository (what this package adds to
// git's checkout) and for 10,000 files (the target: under 1 s, almost all
// of it `git worktree add` writing the files).
func BenchmarkCreate(b *testing.B) {
	for _, n := range []int{200, 10000} {
		b.Run(strconv.Itoa(n)+"files", func(b *testing.B) {
			repo := bigRepo(b, n)
			m := newManager(b, Owner{})
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := m.Create(ctx, Request{AgentID: "codex-bench", Identity: "bench", Cwd: repo})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if len(p.Copied) != 5 {
					b.Fatalf("copied %v", p.Copied)
				}
				if r, err := m.Release(ctx, p, false); err != nil || !r.Removed {
					b.Fatalf("release: %+v, %v", r, err)
				}
				b.StartTimer()
			}
		})
	}
}

// changeFiles edits n files of a big repository's worktree, one line each
// (line 10 of every tenth file of pkg0xx).
func changeFiles(b testing.TB, wt string, n, from int, text string) {
	b.Helper()
	for i := from; i < from+n; i++ {
		p := filepath.Join(wt, fmt.Sprintf("pkg%03d", i%100), fmt.Sprintf("file%05d.go", i))
		bs, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		ls := strings.SplitAfter(string(bs), "\n")
		ls[10] = text + "\n"
		os.WriteFile(p, []byte(strings.Join(ls, "")), 0o644)
	}
}

// agent50 is an agent of the big repository with a 50-file change: 40
// files committed, 10 not.
func agent50(b testing.TB, m *Manager, repo, id string) *Place {
	b.Helper()
	p, err := m.Create(context.Background(), Request{AgentID: "codex-" + id, Identity: id, Cwd: repo})
	if err != nil {
		b.Fatal(err)
	}
	changeFiles(b, p.Path, 40, 0, "// changed by "+id)
	commitAll(b, p.Path, "40 files")
	changeFiles(b, p.Path, 10, 40, "// changed by "+id)
	b.Cleanup(func() {
		run(b, p.Path, "reset", "-q", "--hard", p.Base)
		m.Release(context.Background(), p, false)
	})
	return p
}

func BenchmarkDiff10k(b *testing.B) {
	repo := bigRepo(b, 10000)
	m := newManager(b, Owner{})
	p := agent50(b, m, repo, "differ")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := m.Diff(ctx, DiffRequest{Place: p, Limit: 20000})
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Files) != 50 || !d.PatchMore {
			b.Fatalf("diff of %d files", len(d.Files))
		}
	}
}

func BenchmarkMerge10k(b *testing.B) {
	repo := bigRepo(b, 10000)
	m := newManager(b, Owner{})
	p := agent50(b, m, repo, "merger")
	ctx := context.Background()
	lead0 := run(b, repo, "rev-parse", "HEAD")
	agent0 := run(b, p.Path, "rev-parse", "HEAD")
	rec0, err := m.recordOf(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { // the lead's checkout as it was
		run(b, repo, "read-tree", "-m", "-u", "HEAD", lead0)
		run(b, repo, "update-ref", "refs/heads/main", lead0)
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if res.Stat.Files != 50 {
			b.Fatalf("merged %v", res.Stat)
		}
		// Undo: the lead back, the agent's work uncommitted again, the
		// record's base back.
		run(b, repo, "read-tree", "-m", "-u", res.New, lead0)
		run(b, repo, "update-ref", "refs/heads/main", lead0, res.New)
		run(b, p.Path, "update-ref", "HEAD", agent0)
		run(b, p.Path, "reset", "-q")
		cur, err := m.recordOf(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		r := *rec0
		r.oid = cur.oid
		if err := m.writeRecord(ctx, repo, &r); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// radarAgents are 20 agents' changes of one repository: 10 files each,
// three hunks per file, some files shared.
func radarAgents() map[string][]FileChange {
	agents := map[string][]FileChange{}
	for a := range 20 {
		var fs []FileChange
		for f := range 10 {
			path := "pkg/" + strconv.Itoa((a*7+f*3)%60) + ".go"
			var rs []LineRange
			for h := range 3 {
				s := (a*13+h*40+f)%300 + 1
				rs = append(rs, LineRange{s, s + 4})
			}
			fs = append(fs, FileChange{Path: path, Status: "M", Added: 12, Removed: 9, Ranges: rs})
		}
		agents["agent"+strconv.Itoa(a)] = fs
	}
	return agents
}

// BenchmarkRadarCompare is the radar's own work when a turn ends: the
// ended turn's change compared with 19 other live worktrees, in memory
// and shared (the repository's state read and written under its flock,
// as serve keeps it).
func BenchmarkRadarCompare(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "memory"
		r := NewRadar()
		repo := "repo"
		if shared {
			name, r, repo = "shared", NewSharedRadar(Owner{}), b.TempDir()
		}
		b.Run(name, func(b *testing.B) {
			agents := radarAgents()
			for a, fs := range agents {
				r.Update(a, repo, fs)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a := "agent" + strconv.Itoa(i%20)
				r.Update(a, repo, agents[a])
			}
		})
	}
}

// BenchmarkRadarTurn is the whole cost of an ended turn with 20 live
// worktrees: the git work for the turn's worktree (its Tracker's look)
// and the comparison with the 19 others (a shared radar, as serve has). "edit": the turn changed a line
// of one of its files (untimed), so the look runs git over the changed
// paths; "newfile": it made a new file; "commit": it committed (git
// tells the base again); "idle": it changed nothing (no git). Each for a small repository and for 10,000 files. Full looks
// (a whole snapshot: the first, or after a commit) are
// BenchmarkChangesFull.
func BenchmarkRadarTurn(b *testing.B) {
	for _, n := range []int{200, 10000} {
		for _, kind := range []string{"edit", "newfile", "commit", "idle"} {
			b.Run(strconv.Itoa(n)+"files/"+kind, func(b *testing.B) {
				repo := bigRepo(b, n)
				m := newManager(b, Owner{})
				ctx := context.Background()
				r := NewSharedRadar(Owner{})
				var places []*Place
				var trackers []*Tracker
				for a := range 20 {
					p, err := m.Create(ctx, Request{AgentID: "codex-r" + strconv.Itoa(a), Identity: "r" + strconv.Itoa(a), Cwd: repo})
					if err != nil {
						b.Fatal(err)
					}
					changeFiles(b, p.Path, 5, a*3, "// agent "+strconv.Itoa(a))
					tr := m.Track(p)
					places, trackers = append(places, p), append(trackers, tr)
					b.Cleanup(func() {
						tr.Close()
						run(b, p.Path, "reset", "-q", "--hard", p.Base)
						run(b, p.Path, "clean", "-qfd")
						m.Release(context.Background(), p, false)
					})
					ch, err := tr.Changes(ctx)
					if err != nil {
						b.Fatal(err)
					}
					r.Update(p.AgentID, p.Repo, ch)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					a := i % 20
					p, tr := places[a], trackers[a]
					switch kind {
					case "edit":
						b.StopTimer()
						changeFiles(b, p.Path, 1, a*3+i%5, "// agent "+strconv.Itoa(a)+" turn "+strconv.Itoa(i))
						b.StartTimer()
					case "newfile":
						b.StopTimer()
						write(b, p.Path, map[string]string{fmt.Sprintf("pkg%03d/new%d.go", i%100, i): "package p\n"})
						b.StartTimer()
					case "commit":
						b.StopTimer()
						run(b, p.Path, "commit", "-q", "--allow-empty", "-m", "turn "+strconv.Itoa(i))
						b.StartTimer()
					}
					ch, err := tr.Changes(ctx)
					if err != nil {
						b.Fatal(err)
					}
					r.Update(p.AgentID, p.Repo, ch)
				}
				b.StopTimer()
				var full int64
				for _, tr := range trackers {
					f, _, _ := tr.Looks()
					full += f
				}
				b.ReportMetric(float64(full-20), "full-looks")
			})
		}
	}
}

// BenchmarkChangesFull is a whole look at a worktree's change
// (Manager.Changes: a snapshot through a copy of the index, `git add -A`,
// write-tree, the diff against the base): a Tracker's first look, and
// every look where it cannot tell what changed.
func BenchmarkChangesFull(b *testing.B) {
	for _, n := range []int{200, 10000} {
		b.Run(strconv.Itoa(n)+"files", func(b *testing.B) {
			repo := bigRepo(b, n)
			m := newManager(b, Owner{})
			ctx := context.Background()
			p, err := m.Create(ctx, Request{AgentID: "codex-full", Identity: "full", Cwd: repo})
			if err != nil {
				b.Fatal(err)
			}
			changeFiles(b, p.Path, 5, 0, "// agent")
			b.Cleanup(func() {
				run(b, p.Path, "checkout", "-q", ".")
				m.Release(context.Background(), p, false)
			})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Changes(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
