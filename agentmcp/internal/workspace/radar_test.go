package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lines20 is a file of 20 numbered lines.
var lines20 = func() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}()

// editLine replaces line n (1-based) of the file at path.
func editLine(t *testing.T, path string, n int, text string) {
	t.Helper()
	ls := strings.SplitAfter(read(t, path), "\n")
	ls[n-1] = text + "\n"
	if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// insertAfter inserts a line after line n.
func insertAfter(t *testing.T, path string, n int, text string) {
	t.Helper()
	ls := strings.SplitAfter(read(t, path), "\n")
	ls = append(ls[:n], append([]string{text + "\n"}, ls[n:]...)...)
	if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// found is an overlap as the scenarios state it.
type found struct {
	File string
	Kind OverlapKind
	A, B string
}

func TestRadarScenarios(t *testing.T) {
	type edit func(t *testing.T, wt string)
	line := func(file string, n int) edit {
		return func(t *testing.T, wt string) {
			editLine(t, filepath.Join(wt, file), n, "changed by "+filepath.Base(wt))
		}
	}
	tests := []struct {
		name  string
		edits map[string][]edit // agent → its edits
		want  []found
	}{
		{"same line", map[string][]edit{"a": {line("f.txt", 5)}, "b": {line("f.txt", 5)}},
			[]found{{"f.txt", SameLines, "b", "a"}}},
		{"adjacent lines", map[string][]edit{"a": {line("f.txt", 5)}, "b": {line("f.txt", 6)}},
			[]found{{"f.txt", SameLines, "b", "a"}}},
		{"same file, other lines", map[string][]edit{"a": {line("f.txt", 2)}, "b": {line("f.txt", 15)}},
			[]found{{"f.txt", SameFile, "b", "a"}}},
		{"one line apart", map[string][]edit{"a": {line("f.txt", 5)}, "b": {line("f.txt", 7)}},
			[]found{{"f.txt", SameFile, "b", "a"}}},
		{"different files", map[string][]edit{"a": {line("f.txt", 5)}, "b": {line("g.txt", 5)}}, nil},
		{"insertion next to an edit", map[string][]edit{
			"a": {func(t *testing.T, wt string) { insertAfter(t, filepath.Join(wt, "f.txt"), 5, "inserted") }},
			"b": {line("f.txt", 6)}},
			[]found{{"f.txt", SameLines, "b", "a"}}},
		{"insertion away from an edit", map[string][]edit{
			"a": {func(t *testing.T, wt string) { insertAfter(t, filepath.Join(wt, "f.txt"), 5, "inserted") }},
			"b": {line("f.txt", 12)}},
			[]found{{"f.txt", SameFile, "b", "a"}}},
		{"committed and uncommitted", map[string][]edit{
			"a": {line("f.txt", 10), func(t *testing.T, wt string) { commitAll(t, wt, "a") }},
			"b": {line("f.txt", 10)}},
			[]found{{"f.txt", SameLines, "b", "a"}}},
		{"rename, staged", map[string][]edit{
			"a": {func(t *testing.T, wt string) { run(t, wt, "mv", "f.txt", "h.txt") }},
			"b": {line("f.txt", 3)}},
			[]found{{"f.txt", Rename, "b", "a"}}},
		{"rename, plain mv", map[string][]edit{
			"a": {func(t *testing.T, wt string) {
				if err := os.Rename(filepath.Join(wt, "f.txt"), filepath.Join(wt, "moved/f.txt")); err != nil {
					t.Fatal(err)
				}
			}},
			"b": {line("f.txt", 3)}},
			[]found{{"f.txt", Rename, "b", "a"}}},
		{"both add a file", map[string][]edit{
			"a": {func(t *testing.T, wt string) { write(t, wt, map[string]string{"new.txt": "from a\n"}) }},
			"b": {func(t *testing.T, wt string) { write(t, wt, map[string]string{"new.txt": "from b\n"}) }}},
			[]found{{"new.txt", SameLines, "b", "a"}}},
		{"delete and edit", map[string][]edit{
			"a": {func(t *testing.T, wt string) { os.Remove(filepath.Join(wt, "g.txt")) }},
			"b": {line("g.txt", 19)}},
			[]found{{"g.txt", SameLines, "b", "a"}}},
		{"three agents, one pair", map[string][]edit{"a": {line("f.txt", 1)}, "b": {line("f.txt", 20)}, "c": {line("g.txt", 1)}},
			[]found{{"f.txt", SameFile, "b", "a"}}},
		{"two files of one pair", map[string][]edit{"a": {line("f.txt", 1), line("g.txt", 8)}, "b": {line("f.txt", 1), line("g.txt", 9)}},
			[]found{{"f.txt", SameLines, "b", "a"}, {"g.txt", SameLines, "b", "a"}}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{"f.txt": lines20, "g.txt": lines20, "moved/keep.txt": "x\n"})
			m := newManager(t, Owner{})
			r := NewRadar()
			agents := make([]string, 0, len(tt.edits))
			for a := range tt.edits {
				agents = append(agents, a)
			}
			sort.Strings(agents)
			places := map[string]*Place{}
			for _, a := range agents {
				places[a] = place(t, m, repo, a, "")
				for _, e := range tt.edits[a] {
					e(t, places[a].Path)
				}
			}
			var told []found
			for _, a := range agents {
				ch, err := m.Changes(ctx, places[a])
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range r.Update(a, places[a].Repo, ch) {
					told = append(told, found{o.File, o.Kind, o.A.Agent, o.B.Agent})
				}
			}
			if diff := cmp.Diff(tt.want, told); diff != "" {
				t.Errorf("overlaps told (-want +got):\n%s", diff)
			}
			// Told once: the same changes again tell nothing.
			for _, a := range agents {
				ch, _ := m.Changes(ctx, places[a])
				if again := r.Update(a, places[a].Repo, ch); len(again) != 0 {
					t.Errorf("told again: %+v", again)
				}
			}
			if got := len(r.Overlaps()); got != len(tt.want) {
				t.Errorf("Overlaps() has %d, want %d", got, len(tt.want))
			}
			checkAgainstMerge(t, m, places, agents, tt.want)
		})
	}
}

// checkAgainstMerge checks that the radar's same-lines overlaps of two
// agents are the files git's own merge of their changes conflicts on.
func checkAgainstMerge(t *testing.T, m *Manager, places map[string]*Place, agents []string, want []found) {
	t.Helper()
	if len(agents) != 2 {
		return
	}
	ctx := context.Background()
	a, b := places[agents[0]], places[agents[1]]
	commit := func(p *Place) string {
		s, err := m.snapshot(ctx, p.Path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.commitTree(ctx, p.Path, Signature{"T", "t@example.com"}.env("AUTHOR"), s.tree, "snapshot\n", s.head)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, cb := commit(a), commit(b)
	_, conflicts, err := m.mergeOnto(ctx, a.Path, nil, ca+"^{tree}", cb, a.Base)
	if err != nil {
		t.Fatal(err)
	}
	var got, wantFiles []string
	for _, c := range conflicts {
		got = append(got, c.Path)
	}
	for _, f := range want {
		if f.Kind == SameLines {
			wantFiles = append(wantFiles, f.File)
		}
	}
	if diff := cmp.Diff(wantFiles, got); diff != "" {
		t.Errorf("same-lines overlaps against git's conflicts (-radar +merge):\n%s", diff)
	}
}

func TestRadarTellsOncePerPairAndFile(t *testing.T) {
	r := NewRadar()
	fc := func(path string, ranges ...LineRange) []FileChange {
		return []FileChange{{Path: path, Status: "M", Added: 1, Removed: 1, Ranges: ranges}}
	}
	steps := []struct {
		agent string
		repo  string
		files []FileChange
		want  []found
	}{
		{"a", "r1", fc("x.go", LineRange{1, 2}), nil},
		{"b", "r2", fc("x.go", LineRange{1, 2}), nil},                                     // another repository
		{"c", "r1", fc("x.go", LineRange{10, 12}), []found{{"x.go", SameFile, "c", "a"}}}, // told
		{"c", "r1", fc("x.go", LineRange{11, 12}), nil},                                   // same kind: not again
		{"c", "r1", fc("x.go", LineRange{2, 3}), []found{{"x.go", SameLines, "c", "a"}}},  // worse: told once more
		{"a", "r1", fc("x.go", LineRange{1, 3}), nil},
		{"a", "r1", fc("y.go", LineRange{1, 3}), nil},                                     // gone …
		{"a", "r1", fc("x.go", LineRange{20, 20}), []found{{"x.go", SameFile, "a", "c"}}}, // … and back: told
	}
	for i, s := range steps {
		var got []found
		for _, o := range r.Update(s.agent, s.repo, s.files) {
			got = append(got, found{o.File, o.Kind, o.A.Agent, o.B.Agent})
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("step %d (%s): (-want +got):\n%s", i, s.agent, diff)
		}
	}
	r.Forget("c")
	if o := r.Overlaps(); len(o) != 0 {
		t.Errorf("after Forget: %+v", o)
	}
}

func TestParseHunkOld(t *testing.T) {
	tests := []struct {
		in   string
		want LineRange
	}{
		{"@@ -5 +5 @@", LineRange{5, 5}},
		{"@@ -5,3 +5,2 @@ func x()", LineRange{5, 7}},
		{"@@ -5,0 +6,2 @@", LineRange{6, 5}},
		{"@@ -0,0 +1,4 @@", LineRange{1, 0}},
		{"@@ -1,20 +0,0 @@", LineRange{1, 20}},
	}
	for _, tt := range tests {
		if got, ok := parseHunkOld(tt.in); !ok || got != tt.want {
			t.Errorf("parseHunkOld(%q) = %v, %v; want %v", tt.in, got, ok, tt.want)
		}
	}
}

// TestSharedRadar: two serves' radars on one repository (state in its
// common git directory) compare each other's agents and tell each overlap
// once, whichever sees it first, naming the other serve's agent as that
// serve introduced it; an agent whose serve is gone is dropped.
func TestSharedRadar(t *testing.T) {
	repo := filepath.Join(tempDir(t), "repo.git")
	sharedRadarSteps(t, repo, NewSharedRadar(Owner{}), NewSharedRadar(liveOwner(t)), NewSharedRadar(deadOwner(t)))
	if !exists(filepath.Join(repo, "atm", "radar.lock")) || !exists(filepath.Join(repo, "atm", "radar.json")) {
		t.Error("the shared state is not in the repository's git directory")
	}
}

// TestSharedRadarOnAHost is TestSharedRadar for a repository on a host:
// three serves' radars (NewSharedRadarOn a host's Manager) keep the state
// in the repository's git directory there, through the host's runner
// only (fakeHost: this machine's paths are not the host's).
func TestSharedRadarOnAHost(t *testing.T) {
	h := newFakeHost(t)
	on := func(owner Owner) *Radar { return NewSharedRadarOn(owner, newHostManager(t, h, owner)) }
	real := filepath.Join(h.real, "repo.git")
	sharedRadarSteps(t, h.there(real), on(Owner{}), on(liveOwner(t)), on(deadOwner(t)))
	if !exists(filepath.Join(real, "atm", "radar.lock")) || !exists(filepath.Join(real, "atm", "radar.json")) {
		t.Error("the shared state is not in the repository's git directory on the host")
	}
	if h.calls.Load() == 0 {
		t.Error("nothing ran on the host")
	}
}

// sharedRadarSteps drives two live serves' radars and a gone one's on
// one repository.
func sharedRadarSteps(t *testing.T, repo string, serve1, serve2, gone *Radar) {
	t.Helper()
	fc := func(path string, ranges ...LineRange) []FileChange {
		return []FileChange{{Path: path, Status: "M", Added: 1, Removed: 1, Ranges: ranges}}
	}
	who := func(id string) RadarAgent {
		return RadarAgent{Identity: id, Branch: "atm/" + id, Team: "t-" + id, Lead: "lead-" + id}
	}
	type told struct {
		File, A, B string
		AWho, BWho RadarAgent
		Kind       OverlapKind
	}
	steps := []struct {
		name  string
		radar *Radar
		agent string
		files []FileChange
		want  []told
	}{
		{"serve 1's alice", serve1, "alice", fc("x.go", LineRange{1, 3}), nil},
		{"serve 2's bob, same lines: told by serve 2", serve2, "bob", fc("x.go", LineRange{2, 2}),
			[]told{{"x.go", "bob", "alice", who("bob"), who("alice"), SameLines}}},
		{"alice's next turn: not again", serve1, "alice", fc("x.go", LineRange{1, 4}), nil},
		{"an agent of a serve that is gone", gone, "carol", fc("x.go", LineRange{1, 1}),
			[]told{{"x.go", "carol", "alice", who("carol"), who("alice"), SameLines}, {"x.go", "carol", "bob", who("carol"), who("bob"), SameLines}}},
		{"bob again: carol is dropped, nothing new", serve2, "bob", fc("x.go", LineRange{2, 3}), nil},
	}
	for _, s := range steps {
		var got []told
		for _, o := range s.radar.UpdateAs(s.agent, repo, who(s.agent), s.files) {
			got = append(got, told{o.File, o.A.Agent, o.B.Agent, o.A.Who, o.B.Who, o.Kind})
		}
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("%s: (-want +got):\n%s", s.name, d)
		}
	}
	for i, r := range []*Radar{serve1, serve2} {
		var got []string
		for _, o := range r.Overlaps() {
			got = append(got, o.A.Agent+"+"+o.B.Agent+" "+o.File+" "+o.B.Who.Identity)
		}
		if d := cmp.Diff([]string{"alice+bob x.go bob"}, got); d != "" {
			t.Errorf("serve %d's Overlaps (-want +got):\n%s", i+1, d)
		}
	}
	serve2.Forget("bob")
	// Serve 1's next look sees bob gone (a host's listing is as of the
	// radar's last look there: Radar.viewState).
	if news := serve1.UpdateAs("alice", repo, who("alice"), fc("x.go", LineRange{1, 4})); len(news) != 0 {
		t.Errorf("alice's look after bob left told %+v", news)
	}
	if o := serve1.Overlaps(); len(o) != 0 {
		t.Errorf("after serve 2 let bob go, serve 1 still sees %+v", o)
	}
}
