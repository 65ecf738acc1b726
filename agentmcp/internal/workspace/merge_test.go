package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var agentAuthor = Signature{Name: "alice", Email: "alice@team"}

// agentState is everything of an agent's worktree a failed merge must
// leave as it was.
func agentState(t testing.TB, p *Place) string {
	t.Helper()
	idx := read(t, filepath.Join(run(t, p.Path, "rev-parse", "--absolute-git-dir"), "index"))
	return fmt.Sprintf("head=%s status=%q index=%x", run(t, p.Path, "rev-parse", "HEAD"), run(t, p.Path, "status", "--porcelain"), len(idx))
}

// mergeSetup is a lead's repository that moved on after an agent started,
// and the agent with two commits, an uncommitted edit and a new file.
func mergeSetup(t *testing.T) (*Manager, string, *Place) {
	t.Helper()
	repo := newRepo(t, map[string]string{"a.txt": lines20, "b.txt": lines20, "lead.txt": "lead\n"})
	m := newManager(t, Owner{})
	p := place(t, m, repo, "alice", "")
	editLine(t, filepath.Join(p.Path, "a.txt"), 2, "agent commit 1")
	commitAll(t, p.Path, "agent 1")
	editLine(t, filepath.Join(p.Path, "a.txt"), 18, "agent commit 2")
	commitAll(t, p.Path, "agent 2")
	editLine(t, filepath.Join(p.Path, "b.txt"), 10, "agent uncommitted")
	write(t, p.Path, map[string]string{"added.txt": "new file\n"})
	write(t, repo, map[string]string{"lead.txt": "lead moved on\n"})
	commitAll(t, repo, "lead work")
	return m, repo, p
}

func TestMergeStrategies(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		strategy Strategy
		parents  int // of the new lead tip
		commits  int // made on the lead's branch
	}{
		{Squash, 1, 1},
		{"", 1, 1},
		{MergeCommit, 2, 1},
		{Rebase, 1, 3},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			m, repo, p := mergeSetup(t)
			old := run(t, repo, "rev-parse", "HEAD")
			var phases []string
			res, err := m.Merge(ctx, MergeRequest{Place: p, Strategy: tt.strategy, Author: agentAuthor,
				Progress: func(pr Progress) { phases = append(phases, pr.Phase) }})
			if err != nil {
				t.Fatal(err)
			}
			head := run(t, repo, "rev-parse", "HEAD")
			want := []any{res.Old, res.New, res.LeadBranch, res.Commit, res.Stat, phases, leadState(t, repo)}
			got := []any{old, head, "main", head, DiffStat{3, 4, 3}, []string{"commit", "merge", "update"},
				fmt.Sprintf("head=%s status=%q merge_head=false", head, "")}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("merge (-want +got):\n%s", diff)
			}
			a := read(t, filepath.Join(repo, "a.txt"))
			if !strings.Contains(a, "agent commit 1\n") || !strings.Contains(a, "agent commit 2\n") ||
				!strings.Contains(read(t, filepath.Join(repo, "b.txt")), "agent uncommitted\n") ||
				read(t, filepath.Join(repo, "added.txt")) != "new file\n" || read(t, filepath.Join(repo, "lead.txt")) != "lead moved on\n" {
				t.Error("the lead's files lack a change")
			}
			if n := run(t, repo, "rev-list", "--count", "--first-parent", old+"..HEAD"); n != fmt.Sprint(tt.commits) {
				t.Errorf("%s commits on the lead's branch, want %d", n, tt.commits)
			}
			if n := len(strings.Fields(run(t, repo, "log", "-1", "--format=%P"))); n != tt.parents {
				t.Errorf("the new tip has %d parents, want %d", n, tt.parents)
			}
			if !strings.Contains(run(t, repo, "log", "-1", "--format=%B"), "Agent-Id: codex-alice") {
				t.Errorf("no trailer: %s", run(t, repo, "log", "-1", "--format=%B"))
			}
			if tt.strategy == Squash || tt.strategy == "" {
				if got := run(t, repo, "log", "-1", "--format=%an <%ae>|%cn|%s"); got != "alice <alice@team>|Lead|Work of alice (atm/alice)" {
					t.Errorf("squash commit: %s", got)
				}
			}
			// The agent's uncommitted work is a commit on its branch, by its
			// author, and its worktree is clean.
			if res.Committed == "" || run(t, p.Path, "rev-parse", "HEAD") != res.Committed || run(t, p.Path, "status", "--porcelain") != "" {
				t.Errorf("agent: committed %q, HEAD %s, status %q", res.Committed, run(t, p.Path, "rev-parse", "HEAD"),
					run(t, p.Path, "status", "--porcelain"))
			}
			if got := run(t, p.Path, "log", "-1", "--format=%an <%ae>"); got != "alice <alice@team>" {
				t.Errorf("the agent's work was committed by %s", got)
			}
			// Nothing new: refused. Newer work: only it is merged.
			if _, err := m.Merge(ctx, MergeRequest{Place: p, Strategy: tt.strategy, Author: agentAuthor}); !errors.Is(err, ErrNothingToMerge) {
				t.Errorf("second merge: %v, want ErrNothingToMerge", err)
			}
			d, err := m.Diff(ctx, DiffRequest{Place: p, Stat: true})
			if err != nil || len(d.Files) != 0 {
				t.Errorf("diff after the merge: %+v, %v", d, err)
			}
			editLine(t, filepath.Join(p.Path, "a.txt"), 2, "agent again")
			res2, err := m.Merge(ctx, MergeRequest{Place: p, Strategy: tt.strategy, Author: agentAuthor})
			if err != nil {
				t.Fatal(err)
			}
			if res2.Stat != (DiffStat{1, 1, 1}) || !strings.Contains(read(t, filepath.Join(repo, "a.txt")), "agent again\n") {
				t.Errorf("third merge brought %v", res2.Stat)
			}
		})
	}
}

func TestMergeRefusals(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(t *testing.T, repo string, p *Place)
		want    error
	}{
		{"the lead has uncommitted changes", func(t *testing.T, repo string, p *Place) {
			editLine(t, filepath.Join(repo, "b.txt"), 1, "lead is editing")
		}, ErrLeadDirty},
		{"the lead has staged changes", func(t *testing.T, repo string, p *Place) {
			write(t, repo, map[string]string{"staged.txt": "s\n"})
			run(t, repo, "add", "staged.txt")
		}, ErrLeadDirty},
		{"an untracked file of the lead is in the way", func(t *testing.T, repo string, p *Place) {
			write(t, repo, map[string]string{"added.txt": "the lead's own\n"})
		}, ErrLeadDirty},
		{"the lead is detached", func(t *testing.T, repo string, p *Place) {
			run(t, repo, "checkout", "-q", "--detach")
		}, ErrLeadBusy},
		{"the lead is mid-merge", func(t *testing.T, repo string, p *Place) {
			run(t, repo, "checkout", "-q", "-b", "side", "HEAD~1")
			write(t, repo, map[string]string{"lead.txt": "side\n"})
			commitAll(t, repo, "side")
			run(t, repo, "checkout", "-q", "main")
			tryGit(repo, "merge", "side")
		}, ErrLeadBusy},
		{"nothing to merge", func(t *testing.T, repo string, p *Place) {
			run(t, p.Path, "reset", "-q", "--hard", p.Base)
			run(t, p.Path, "clean", "-q", "-fd")
		}, ErrNothingToMerge},
	}
	for _, tt := range tests {
		for _, check := range []string{"", "exit 0"} {
			t.Run(tt.name+" check="+check, func(t *testing.T) {
				m, repo, p := mergeSetup(t)
				tt.prepare(t, repo, p)
				lead, agent := leadState(t, repo), agentState(t, p)
				leadFiles := read(t, filepath.Join(repo, "b.txt"))
				_, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor, Check: check})
				if !errors.Is(err, tt.want) {
					t.Fatalf("Merge: %v, want %v", err, tt.want)
				}
				if got := leadState(t, repo); got != lead {
					t.Errorf("the lead changed:\n%s\n%s", lead, got)
				}
				if got := agentState(t, p); got != agent {
					t.Errorf("the agent changed:\n%s\n%s", agent, got)
				}
				if read(t, filepath.Join(repo, "b.txt")) != leadFiles {
					t.Error("the lead's file changed")
				}
				if r := refs(t, repo, "refs/atm/checks/"); r != nil {
					t.Errorf("check records left: %v", r)
				}
			})
		}
	}
}

func TestMergeConflict(t *testing.T) {
	ctx := context.Background()
	for _, strategy := range []Strategy{Squash, Rebase} {
		t.Run(string(strategy), func(t *testing.T) {
			m, repo, p := mergeSetup(t)
			editLine(t, filepath.Join(repo, "a.txt"), 18, "the lead's line 18")
			os.Remove(filepath.Join(repo, "b.txt"))
			commitAll(t, repo, "lead conflicts")
			lead, agent := leadState(t, repo), agentState(t, p)
			_, err := m.Merge(ctx, MergeRequest{Place: p, Strategy: strategy, Author: agentAuthor, Check: "exit 0"})
			var ce *ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
				t.Fatalf("Merge: %v, want a ConflictError", err)
			}
			if ce.LeadBranch != "main" || ce.Lead != run(t, repo, "rev-parse", "HEAD") {
				t.Errorf("the conflict names the lead's branch %q at %q", ce.LeadBranch, ce.Lead)
			}
			var got []string
			for _, c := range ce.Conflicts {
				s := c.Path + " " + c.Kind
				for _, h := range c.Hunks {
					s += fmt.Sprintf(" @%d lead=%q agent=%q", h.Line, h.Lead, h.Agent)
				}
				if strategy == Rebase && c.Commit == "" {
					s += " (no commit)"
				}
				got = append(got, s)
			}
			want := []string{`a.txt contents @18 lead="the lead's line 18\n" agent="agent commit 2\n"`}
			if strategy == Squash {
				want = append(want, "b.txt modify/delete")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			if leadState(t, repo) != lead || agentState(t, p) != agent {
				t.Error("a conflict changed something")
			}
			// The agent takes the lead's branch in and resolves; the next
			// merge goes through.
			commitAll(t, p.Path, "agent's uncommitted work")
			resolveAsAgent(t, p.Path, strategy)
			res, err := m.Merge(ctx, MergeRequest{Place: p, Strategy: strategy, Author: agentAuthor})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stat.Files != 2 || run(t, repo, "status", "--porcelain") != "" {
				t.Errorf("after the agent's resolution: %+v", res)
			}
		})
	}
}

// resolveAsAgent takes main into the agent's branch as an agent told of a
// conflict would: merging it (or, for a rebase, rebasing onto it), keeping
// its own a.txt and the lead's deletion of b.txt.
func resolveAsAgent(t *testing.T, wt string, strategy Strategy) {
	t.Helper()
	if strategy != Rebase {
		if _, err := tryGit(wt, "merge", "-q", "main"); err == nil {
			t.Fatal("the agent's merge of main did not conflict")
		}
		run(t, wt, "checkout", "--ours", "a.txt")
		run(t, wt, "add", "a.txt")
		run(t, wt, "rm", "-q", "b.txt")
		run(t, wt, "commit", "-q", "--no-edit")
		return
	}
	_, err := tryGit(wt, "rebase", "main")
	for i := 0; err != nil && i < 5; i++ {
		st := run(t, wt, "status", "--porcelain")
		if strings.Contains(st, "a.txt") {
			run(t, wt, "checkout", "--theirs", "a.txt") // in a rebase, theirs is the agent's commit
			run(t, wt, "add", "a.txt")
		}
		if strings.Contains(st, "b.txt") {
			run(t, wt, "rm", "-q", "b.txt")
		}
		cmd := []string{"-c", "core.editor=true", "rebase", "--continue"}
		_, err = tryGit(wt, cmd...)
	}
	if err != nil {
		t.Fatalf("the agent's rebase: %v", err)
	}
}

func TestMergeCheck(t *testing.T) {
	ctx := context.Background()
	t.Run("passes", func(t *testing.T) {
		m, repo, p := mergeSetup(t)
		_, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor,
			Check: `test -f added.txt && test -f .env && echo "checked $(git rev-parse HEAD) in $ATM_WORKTREE"`})
		if err == nil || !errors.Is(err, ErrCheckFailed) {
			t.Fatalf("a check without .env passed: %v", err)
		}
		write(t, repo, map[string]string{".gitignore": ".env\n", ".worktreeinclude": ".env\n"})
		commitAll(t, repo, "ignore .env")
		write(t, repo, map[string]string{".env": "SECRET=1\n"})
		res, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor,
			Check: `test -f added.txt && test -f .env && echo "checked $(git rev-parse HEAD) in $ATM_WORKTREE"`})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.Passed() || !strings.HasPrefix(res.Check.Tail, "checked "+res.Commit+" in "+filepath.Join(repo, ChecksDir, "alice-")) {
			t.Errorf("check %+v", res.Check)
		}
		if r := refs(t, repo, "refs/atm/checks/"); r != nil || len(run(t, repo, "worktree", "list")) == 0 {
			t.Errorf("check records left: %v", r)
		}
		if ents, _ := os.ReadDir(filepath.Join(repo, ChecksDir)); len(ents) != 0 {
			t.Errorf("check worktrees left: %v", ents)
		}
	})
	t.Run("fails", func(t *testing.T) {
		m, repo, p := mergeSetup(t)
		lead, agent := leadState(t, repo), agentState(t, p)
		old := progressEvery
		progressEvery = 50 * time.Millisecond
		defer func() { progressEvery = old }()
		var mu sync.Mutex
		var lines []string
		_, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor, Check: `echo "compiling"; sleep 0.5; echo "FAIL: TestX" >&2; exit 7`,
			Progress: func(pr Progress) {
				mu.Lock()
				defer mu.Unlock()
				if pr.Phase == "check" && pr.Line != "" {
					lines = append(lines, pr.Line)
				}
			}})
		var ce *CheckError
		if !errors.As(err, &ce) || ce.Result.ExitCode != 7 || ce.Result.Tail != "compiling\nFAIL: TestX\n" {
			t.Fatalf("Merge: %v, want a CheckError with exit 7 and the output", err)
		}
		if leadState(t, repo) != lead || agentState(t, p) != agent {
			t.Error("a failing check changed something")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lines) < 2 || lines[0] != "running "+ce.Result.Command || lines[len(lines)-1] != "compiling" {
			t.Errorf("progress lines %q", lines)
		}
	})
}

func TestMergeWhileTheLeadWorks(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		lead  func(t *testing.T, repo string) // runs during the check
		want  error
		files map[string]string // of the lead's checkout afterwards
	}{
		{"the lead commits", func(t *testing.T, repo string) {
			write(t, repo, map[string]string{"lead.txt": "committed during the check\n"})
			commitAll(t, repo, "during")
		}, ErrLeadMoved, map[string]string{"lead.txt": "committed during the check\n", "added.txt": ""}},
		{"the lead edits a file the merge changes", func(t *testing.T, repo string) {
			write(t, repo, map[string]string{"a.txt": "the lead's unsaved edit\n"})
		}, ErrLeadDirty, map[string]string{"a.txt": "the lead's unsaved edit\n", "added.txt": ""}},
		{"the lead edits another file", func(t *testing.T, repo string) {
			write(t, repo, map[string]string{"lead.txt": "the lead's unsaved edit\n"})
		}, nil, map[string]string{"lead.txt": "the lead's unsaved edit\n", "added.txt": "new file\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, repo, p := mergeSetup(t)
			once := sync.Once{}
			_, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor, Check: "sleep 0.2",
				Progress: func(pr Progress) {
					if pr.Phase == "check" {
						once.Do(func() { tt.lead(t, repo) })
					}
				}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Merge: %v, want %v", err, tt.want)
			}
			for f, want := range tt.files {
				got := ""
				if exists(filepath.Join(repo, f)) {
					got = read(t, filepath.Join(repo, f))
				}
				if got != want {
					t.Errorf("%s = %q, want %q", f, got, want)
				}
			}
			if exists(filepath.Join(repo, ".git/MERGE_HEAD")) || strings.Contains(run(t, repo, "status", "--porcelain"), "U") {
				t.Error("the lead is mid-merge")
			}
			if st := run(t, repo, "status", "--porcelain"); tt.want == ErrLeadMoved && st != "" {
				t.Errorf("the lead's status after its own commit: %q", st)
			}
		})
	}
}

func TestMergeToBranch(t *testing.T) {
	ctx := context.Background()
	m, repo, p := mergeSetup(t)
	lead := leadState(t, repo)
	res, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor, ToBranch: true, Message: "Add the new file"})
	if err != nil {
		t.Fatal(err)
	}
	if leadState(t, repo) != lead || res.New != res.Old || res.Branch != "atm-pr/alice" {
		t.Errorf("to a branch: %+v; the lead changed: %v", res, leadState(t, repo) != lead)
	}
	got := run(t, repo, "log", "-1", "--format=%P|%s", "atm-pr/alice")
	if got != res.Old+"|Add the new file" {
		t.Errorf("the branch's commit: %s", got)
	}
	if files := run(t, repo, "diff", "--name-only", res.Old, "atm-pr/alice"); files != "a.txt\nadded.txt\nb.txt" {
		t.Errorf("the branch changes %q", files)
	}
	// The lead's branch did not take it: a merge into it still has work.
	if _, err := m.Merge(ctx, MergeRequest{Place: p, Author: agentAuthor}); err != nil {
		t.Fatal(err)
	}
}

func TestMergeTwoAgents(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": lines20, "b.txt": lines20})
	m := newManager(t, Owner{})
	alice, bob := place(t, m, repo, "alice", ""), place(t, m, repo, "bob", "")
	editLine(t, filepath.Join(alice.Path, "a.txt"), 3, "alice")
	editLine(t, filepath.Join(bob.Path, "b.txt"), 3, "bob")
	if _, err := m.Merge(ctx, MergeRequest{Place: alice, Author: agentAuthor}); err != nil {
		t.Fatal(err)
	}
	// Bob's change is still only his, against his older base.
	d, err := m.Diff(ctx, DiffRequest{Place: bob, Stat: true})
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != "b.txt" {
		t.Fatalf("bob's diff after alice's merge: %+v, %v", d, err)
	}
	res, err := m.Merge(ctx, MergeRequest{Place: bob, Author: Signature{"bob", "bob@team"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stat != (DiffStat{1, 1, 1}) || !strings.Contains(read(t, filepath.Join(repo, "a.txt")), "alice\n") ||
		!strings.Contains(read(t, filepath.Join(repo, "b.txt")), "bob\n") {
		t.Errorf("bob's merge: %+v", res)
	}
	// Bob takes the lead's branch in; his diff stays his own.
	editLine(t, filepath.Join(bob.Path, "b.txt"), 5, "bob again")
	commitAll(t, bob.Path, "bob again")
	run(t, bob.Path, "rebase", "-q", "main")
	d, err = m.Diff(ctx, DiffRequest{Place: bob, Stat: true})
	if err != nil || len(d.Files) != 1 || d.Stat != (DiffStat{1, 1, 1}) {
		t.Errorf("bob's diff after his rebase: %+v, %v", d, err)
	}
}
