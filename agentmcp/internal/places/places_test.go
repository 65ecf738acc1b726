package places

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// TestMain isolates git from the developer's configuration.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "places-home-")
	if err != nil {
		panic(err)
	}
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, []byte("[user]\n\tname = Lead\n\temail = lead@example.com\n[init]\n\tdefaultBranch = main\n"), 0o600); err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("GIT_CONFIG_GLOBAL", cfg)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// lines is a file of n numbered lines.
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// setLine replaces line n (1-based) of the file at path.
func setLine(t *testing.T, path string, n int, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(b), "\n")
	ls[n-1] = text + "\n"
	if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// world is a repository, an ATM home with teams, and serves' Places.
type world struct {
	repo string
	atm  *atmclient.Client
	home string
}

func newWorld(t *testing.T, teams map[string][]string) *world {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{repo: filepath.Join(dir, "repo"), home: filepath.Join(dir, "home")}
	os.MkdirAll(w.repo, 0o755)
	git(t, w.repo, "init", "-q")
	os.WriteFile(filepath.Join(w.repo, "f.txt"), []byte(lines(20)), 0o644)
	os.WriteFile(filepath.Join(w.repo, "g.txt"), []byte(lines(20)), 0o644)
	git(t, w.repo, "add", "-A")
	git(t, w.repo, "commit", "-q", "-m", "base")
	for team, members := range teams {
		var ms []string
		for _, m := range members {
			ms = append(ms, fmt.Sprintf(`{"name":%q,"agentId":"%s@%s"}`, m, m, team))
		}
		d := filepath.Join(w.home, ".claude", "teams", team)
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"name":"`+team+`","members":[`+strings.Join(ms, ",")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if w.atm, err = atmclient.New(atmclient.Config{Home: w.home}); err != nil {
		t.Fatal(err)
	}
	return w
}

// serve is one serve's Places: its ATM team and lead.
func (w *world) serve(t *testing.T, team, lead string, runner workspace.Runner, lookTimeout time.Duration) *Places {
	t.Helper()
	m, err := workspace.New(context.Background(), workspace.Config{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	ps := New(Config{Manager: m, ATM: w.atm, MailTeam: team, Lead: lead, LookTimeout: lookTimeout})
	t.Cleanup(ps.Close)
	return ps
}

// mails returns the radar's mails in an inbox ("agent@team").
func (w *world) mails(t *testing.T, addr string) []string {
	t.Helper()
	agent, team, _ := strings.Cut(addr, "@")
	r, err := w.atm.Read(context.Background(), team, agent, atmclient.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range r.Messages {
		if strings.HasPrefix(m.Summary, "conflict radar: ") {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestRadarMail: agents of one serve or of two (each with its own team
// and lead) edit one repository; after each agent's turn is looked at
// (TurnEnded, then the radar's pass: what the radar's goroutine does when
// woken), exactly the expected mails are in the inboxes: the overlap is
// told by the pass of the later turn (no timer in between), once per pair
// and file, both agents and each lead once; a second round tells nothing.
func TestRadarMail(t *testing.T) {
	type agent struct {
		serve, identity string
		edit            func(t *testing.T, wt string)
	}
	line := func(file string, n int) func(t *testing.T, wt string) {
		return func(t *testing.T, wt string) { setLine(t, filepath.Join(wt, file), n, "changed in "+filepath.Base(wt)) }
	}
	teams := map[string][]string{"t1": {"lead1", "alice", "bob", "carol"}, "t2": {"lead2", "dave"}}
	serves := map[string][2]string{"s1": {"t1", "lead1"}, "s2": {"t2", "lead2"}}
	tests := []struct {
		name   string
		agents []agent
		want   map[string][]string // inbox → the mails' texts, by a part of each
	}{
		{"same lines", []agent{{"s1", "alice", line("f.txt", 2)}, {"s1", "bob", line("f.txt", 3)}},
			map[string][]string{
				"alice@t1": {"bob (branch atm/bob) is changing f.txt too, on the same lines (merging one after the other will conflict): yours lines 2, bob's lines 3."},
				"bob@t1":   {"alice (branch atm/alice) is changing f.txt too, on the same lines (merging one after the other will conflict): yours lines 3, alice's lines 2."},
				"lead1@t1": {"bob (branch atm/bob) and alice (branch atm/alice) both change f.txt, on the same lines"},
			}},
		{"other lines", []agent{{"s1", "alice", line("f.txt", 2)}, {"s1", "bob", line("f.txt", 15)}},
			map[string][]string{
				"alice@t1": {"is changing f.txt too, on other lines (git can merge both, but check they fit): yours lines 2, bob's lines 15"},
				"bob@t1":   {"is changing f.txt too, on other lines"},
				"lead1@t1": {"both change f.txt, on other lines"},
			}},
		{"different files", []agent{{"s1", "alice", line("f.txt", 2)}, {"s1", "bob", line("g.txt", 2)}}, map[string][]string{}},
		{"a rename", []agent{
			{"s1", "alice", func(t *testing.T, wt string) { git(t, wt, "mv", "f.txt", "h.txt") }},
			{"s1", "bob", line("f.txt", 9)}},
			map[string][]string{
				"alice@t1": {"bob (branch atm/bob) is changing f.txt too, and one of them renames it: yours renamed to h.txt, bob's lines 9"},
				"bob@t1":   {"alice (branch atm/alice) is changing f.txt too, and one of them renames it: yours lines 9, alice's renamed to h.txt"},
				"lead1@t1": {"both change f.txt, and one of them renames it"},
			}},
		{"three agents, one pair", []agent{{"s1", "alice", line("f.txt", 2)}, {"s1", "bob", line("g.txt", 2)}, {"s1", "carol", line("g.txt", 2)}},
			map[string][]string{
				"bob@t1":   {"carol (branch atm/carol) is changing g.txt too, on the same lines"},
				"carol@t1": {"bob (branch atm/bob) is changing g.txt too, on the same lines"},
				"lead1@t1": {"carol (branch atm/carol) and bob (branch atm/bob) both change g.txt"},
			}},
		{"two serves, two teams", []agent{{"s1", "alice", line("f.txt", 2)}, {"s2", "dave", line("f.txt", 2)}},
			map[string][]string{
				"alice@t1": {"dave (branch atm/dave) is changing f.txt too, on the same lines"},
				"dave@t2":  {"alice (branch atm/alice) is changing f.txt too, on the same lines"},
				"lead1@t1": {"dave (branch atm/dave) and alice (branch atm/alice) both change f.txt"},
				"lead2@t2": {"dave (branch atm/dave) and alice (branch atm/alice) both change f.txt"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, teams)
			pss := map[string]*Places{}
			for name, s := range serves {
				pss[name] = w.serve(t, s[0], s[1], nil, 0)
			}
			places := make([]*session.Place, len(tt.agents))
			for i, a := range tt.agents {
				p, err := pss[a.serve].Place(context.Background(), session.PlaceRequest{AgentID: "codex-" + a.identity, Identity: a.identity, Cwd: w.repo})
				if err != nil {
					t.Fatal(err)
				}
				places[i] = p
				a.edit(t, p.Path)
			}
			for round := range 2 {
				for i, a := range tt.agents {
					pss[a.serve].TurnEnded(places[i])
					pss[a.serve].pass()
				}
				got := map[string][]string{}
				for team, members := range teams {
					for _, m := range members {
						if ms := w.mails(t, m+"@"+team); len(ms) > 0 {
							got[m+"@"+team] = ms
						}
					}
				}
				if d := cmp.Diff(tt.want, got, cmp.Comparer(func(want, got string) bool {
					return strings.Contains(got, want) || strings.Contains(want, got)
				})); d != "" {
					t.Errorf("round %d: mails (-want +got):\n%s", round+1, d)
				}
			}
		})
	}
}

// hangingGit is git as the user has it, but for `git add` (the radar's
// snapshot), which hangs until it is stopped.
type hangingGit struct{ workspace.LocalRunner }

func (h hangingGit) Run(ctx context.Context, c *workspace.Command) error {
	if c.Name == "git" && len(c.Args) > 0 && c.Args[0] == "add" {
		<-ctx.Done()
		return ctx.Err()
	}
	return h.LocalRunner.Run(ctx, c)
}

// TestRadarLookIsBounded: a look whose git hangs ends at the look's
// bound (the pass returns), telling nothing.
func TestRadarLookIsBounded(t *testing.T) {
	w := newWorld(t, map[string][]string{"t1": {"lead1", "alice", "bob"}})
	hung := w.serve(t, "t1", "lead1", hangingGit{}, 50*time.Millisecond)
	ok := w.serve(t, "t1", "lead1", nil, 0)
	pa, err := hung.Place(context.Background(), session.PlaceRequest{AgentID: "codex-alice", Identity: "alice", Cwd: w.repo})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := ok.Place(context.Background(), session.PlaceRequest{AgentID: "codex-bob", Identity: "bob", Cwd: w.repo})
	if err != nil {
		t.Fatal(err)
	}
	setLine(t, filepath.Join(pa.Path, "f.txt"), 1, "alice")
	setLine(t, filepath.Join(pb.Path, "f.txt"), 1, "bob")
	ok.TurnEnded(pb)
	ok.pass()
	hung.TurnEnded(pa)
	hung.pass() // returns: its look gave up at the bound
	if ms := w.mails(t, "lead1@t1"); len(ms) != 0 {
		t.Errorf("a look that could not read the change told %q", ms)
	}
	if o := hung.Overlaps(); len(o) != 0 {
		t.Errorf("overlaps after a failed look: %+v", o)
	}
}

// TestClientError: workspace's failures as the client sees them.
func TestClientError(t *testing.T) {
	req := session.PlaceRequest{AgentID: "codex-x", Cwd: "/somewhere", Base: "nope"}
	tests := []struct {
		name string
		err  error
		code error
		msg  string
	}{
		{"outside git", fmt.Errorf("x: %w", workspace.ErrNotRepository), proxyerr.ErrInvalidParams, "needs a git repository, and /somewhere is not inside one"},
		{"no commit", workspace.ErrNoCommits, proxyerr.ErrInvalidParams, "needs a commit to start from"},
		{"bad base", workspace.ErrBadBase, proxyerr.ErrInvalidParams, `base "nope" is not a commit`},
		{"held", workspace.ErrOwned, proxyerr.ErrInvalidSessionParams, "held by a live process"},
		{"symlink", workspace.ErrSymlink, proxyerr.ErrInvalidSessionParams, "a symbolic link there could send the agents' worktrees anywhere"},
		{"old git", workspace.ErrGitTooOld, proxyerr.ErrInvalidSessionParams, "git is too old"},
		{"setup", &workspace.SetupError{Command: "make", Result: workspace.CommandResult{Tail: "boom"}}, proxyerr.ErrInvalidSessionParams, `worktree_setup "make" failed`},
		{"other", errors.New("disk full"), proxyerr.ErrInternal, "the agent's worktree: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := clientError(tt.err, req)
			if !errors.Is(err, tt.code) {
				t.Errorf("error %v is not %v", err, tt.code)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %v lost its cause %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q, want it to say %q", err.Error(), tt.msg)
			}
		})
	}
}

// countingRunner is the user's git, counting the commands it ran.
type countingRunner struct {
	workspace.LocalRunner
	n *atomic.Int64
}

func (c countingRunner) Run(ctx context.Context, cmd *workspace.Command) error {
	c.n.Add(1)
	return c.LocalRunner.Run(ctx, cmd)
}

// TestPlacesOnAHost: a place asked for on a host is made by that host's
// workspace (and reviewed, merged and released by it), never this
// machine's; the radar compares the agents of a host with each other,
// not with this machine's (a repository at the same path here is
// another one); a merge there tells the other agents there; a host
// without a workspace is refused.
func TestPlacesOnAHost(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, map[string][]string{"t1": {"lead1", "alice", "bob", "carol"}})
	var here, there atomic.Int64
	local, err := workspace.New(ctx, workspace.Config{Runner: countingRunner{n: &here}})
	if err != nil {
		t.Fatal(err)
	}
	box, err := workspace.New(ctx, workspace.Config{Runner: countingRunner{n: &there}, Host: "box"})
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	ps := New(Config{Manager: local, ATM: w.atm, MailTeam: "t1", Lead: "lead1",
		Hosts: map[string]func(context.Context) (*workspace.Manager, error){"box": func(context.Context) (*workspace.Manager, error) {
			asked++
			return box, nil
		}}})
	t.Cleanup(ps.Close)

	// carol here; alice and bob on box, in its repository (a clone at
	// another path: the fake host's disk is this machine's, so a
	// repository at the same path would be this one, its radar state
	// too): not one command of theirs runs here.
	boxRepo := filepath.Join(t.TempDir(), "box-repo")
	git(t, filepath.Dir(boxRepo), "clone", "-q", w.repo, boxRepo)
	carol, err := ps.Place(ctx, session.PlaceRequest{AgentID: "codex-carol", Identity: "carol", Cwd: w.repo})
	if err != nil {
		t.Fatal(err)
	}
	setLine(t, filepath.Join(carol.Path, "f.txt"), 2, "changed by carol")
	ps.TurnEnded(carol)
	ps.pass()
	before := here.Load()
	alice, err := ps.Place(ctx, session.PlaceRequest{AgentID: "codex-alice", Identity: "alice", Cwd: boxRepo, Host: "box"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := ps.Place(ctx, session.PlaceRequest{AgentID: "codex-bob", Identity: "bob", Cwd: boxRepo, Host: "box"})
	if err != nil {
		t.Fatal(err)
	}
	if alice.Host != "box" || bob.Host != "box" || carol.Host != "" {
		t.Errorf("hosts of the places: %q %q %q", alice.Host, bob.Host, carol.Host)
	}
	for _, p := range []*session.Place{alice, bob} {
		setLine(t, filepath.Join(p.Path, "f.txt"), 2, "changed by "+p.Identity)
		ps.TurnEnded(p)
		ps.pass()
	}
	if n := here.Load() - before; n != 0 {
		t.Errorf("%d commands ran here for the places on the host", n)
	}
	mails := map[string]int{}
	for _, who := range []string{"alice", "bob", "carol", "lead1"} {
		mails[who] = len(w.mails(t, who+"@t1"))
	}
	if diff := cmp.Diff(map[string]int{"alice": 1, "bob": 1, "carol": 0, "lead1": 1}, mails); diff != "" {
		t.Errorf("radar mails (-want +got):\n%s", diff)
	}
	ov := ps.Overlaps()
	if len(ov) != 1 || ov[0].Host != "box" || ov[0].File != "f.txt" {
		t.Errorf("Overlaps = %+v, want alice and bob's on box", ov)
	}
	// Another serve's agent in that repository on box is compared with
	// them: the radar's state is the repository's there.
	ps2 := New(Config{Manager: local, ATM: w.atm, MailTeam: "t1", Lead: "lead1",
		Hosts: map[string]func(context.Context) (*workspace.Manager, error){"box": func(context.Context) (*workspace.Manager, error) { return box, nil }}})
	t.Cleanup(ps2.Close)
	dave, err := ps2.Place(ctx, session.PlaceRequest{AgentID: "codex-dave", Identity: "dave", Cwd: boxRepo, Host: "box"})
	if err != nil {
		t.Fatal(err)
	}
	setLine(t, filepath.Join(dave.Path, "f.txt"), 2, "changed by dave")
	ps2.TurnEnded(dave)
	ps2.pass()
	if got := len(w.mails(t, "alice@t1")); got != 2 {
		t.Errorf("alice has %d radar mails, want 2 (bob's, then the other serve's dave's)", got)
	}
	if ov := ps2.Overlaps(); len(ov) != 3 {
		t.Errorf("the other serve's Overlaps = %+v, want dave's with alice and bob, and theirs", ov)
	}
	if _, err := ps2.Release(ctx, dave, false); err != nil {
		t.Errorf("Release dave: %v", err)
	}

	// Reviewed and merged there; bob is told, carol is not.
	n := there.Load()
	d, err := ps.Diff(ctx, alice, workspace.DiffRequest{Stat: true})
	if err != nil || d.Stat.Files != 1 || there.Load() == n {
		t.Fatalf("Diff on the host = %+v, %v (%d commands there)", d, err, there.Load()-n)
	}
	git(t, boxRepo, "checkout", "-q", "-b", "lead")
	merged, err := ps.Merge(ctx, alice, workspace.MergeRequest{Strategy: workspace.Squash, Message: "alice", Author: workspace.Signature{Name: "alice", Email: "a@t1"}})
	if err != nil {
		t.Fatalf("Merge on the host: %v", err)
	}
	if diff := cmp.Diff([]string{"bob"}, merged.Told); diff != "" {
		t.Errorf("told of the merge (-want +got):\n%s", diff)
	}
	if h := ps.Head(ctx, "box", boxRepo); h != merged.New {
		t.Errorf("Head on the host = %s, want the merged %s", h, merged.New)
	}
	for _, p := range []*session.Place{alice, bob, carol} {
		if _, err := ps.Release(ctx, p, false); err != nil {
			t.Errorf("Release %s: %v", p.Identity, err)
		}
	}
	if asked == 0 {
		t.Error("the host's workspace was never asked for")
	}
	if _, err := ps.Place(ctx, session.PlaceRequest{AgentID: "codex-x", Identity: "x", Cwd: w.repo, Host: "far"}); !errors.Is(err, proxyerr.ErrInvalidParams) ||
		!strings.Contains(err.Error(), `isolation "worktree" is not available on host "far"`) {
		t.Errorf("a place on a host without a workspace: %v", err)
	}
}
