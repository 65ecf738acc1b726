package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestListAndPrune(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	live, dead := newManager(t, liveOwner(t)), newManager(t, deadOwner(t))
	self := newManager(t, Owner{})

	place(t, live, repo, "live-clean", "")
	write(t, place(t, live, repo, "live-dirty", "").Path, map[string]string{"a.txt": "x\n"})
	place(t, dead, repo, "orphan-clean", "")
	write(t, place(t, dead, repo, "orphan-dirty", "").Path, map[string]string{"new.txt": "x\n"})
	kc := place(t, self, repo, "kept-clean", "")
	if _, err := self.Release(ctx, kc, true); err != nil { // serve stopped: kept as is
		t.Fatal(err)
	}
	ka := place(t, self, repo, "kept-ahead", "")
	write(t, ka.Path, map[string]string{"b.txt": "b\n"})
	commitAll(t, ka.Path, "b")
	if _, err := self.Release(ctx, ka, false); err != nil {
		t.Fatal(err)
	}
	gone := place(t, self, repo, "gone", "")
	self.Release(ctx, gone, true)
	if err := os.RemoveAll(gone.Path); err != nil {
		t.Fatal(err)
	}
	// Not ours: a worktree of the user's, locked by them.
	user := filepath.Join(tempDir(t), "user-wt")
	run(t, repo, "worktree", "add", "-q", "-b", "feature", user)
	run(t, repo, "worktree", "lock", "--reason", "mine", user)

	type row struct {
		Name    string
		State   State
		Dirty   int
		Ahead   int
		Missing bool
	}
	list, err := self.List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	var got []row
	for _, w := range list {
		got = append(got, row{w.Name, w.State, w.Dirty, w.Ahead, w.Missing})
	}
	want := []row{
		{"gone", Kept, 0, 0, true},
		{"kept-ahead", Kept, 0, 1, false},
		{"kept-clean", Kept, 0, 0, false},
		{"live-clean", Live, 0, 0, false},
		{"live-dirty", Live, 1, 0, false},
		{"orphan-clean", Orphaned, 0, 0, false},
		{"orphan-dirty", Orphaned, 1, 0, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}

	rep, err := self.Prune(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	var removed, kept []string
	for _, w := range rep.Removed {
		removed = append(removed, w.Name)
	}
	for _, k := range rep.Kept {
		kept = append(kept, k.Name+": "+k.Reason)
	}
	liveReason := "live-clean: live: held by agent codex-live-clean of pid " + strconv.Itoa(live.owner.PID)
	wantKept := []string{"kept-ahead: 1 commits ahead of its base", liveReason,
		"live-dirty: live: held by agent codex-live-dirty of pid " + strconv.Itoa(live.owner.PID), "orphan-dirty: dirty: 1 uncommitted paths"}
	if diff := cmp.Diff([]string{"gone", "kept-clean", "orphan-clean"}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKept, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	for _, n := range []string{"gone", "kept-clean", "orphan-clean"} {
		if exists(filepath.Join(repo, WorktreesDir, n)) || run(t, repo, "branch", "--list", "atm/"+n) != "" {
			t.Errorf("%s is still there", n)
		}
	}
	if got := refs(t, repo, recordRefs); len(got) != 4 {
		t.Errorf("records left: %v", got)
	}
	if lockOf(t, repo, user) != "mine|locked" || run(t, repo, "rev-parse", "--abbrev-ref", "feature") != "feature" {
		t.Error("the user's worktree was touched")
	}
}
