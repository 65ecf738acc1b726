package session

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// fakeHost is a host with a root, the directories it has, git facts of
// its own and a backend per kind; down makes it unable to tell facts.
type fakeHost struct {
	root     string
	dirs     map[string]bool
	facts    gitctx.Facts
	backends map[string]Backend

	mu   sync.Mutex
	down bool
}

func (h *fakeHost) Backend(kind string) Backend { return h.backends[kind] }

func (h *fakeHost) Dir(_ context.Context, dir string) (string, error) {
	if !path.IsAbs(dir) {
		dir = path.Join(h.root, dir)
	}
	if !h.dirs[dir] {
		return "", errors.New(dir + " is not an existing directory there")
	}
	return dir, nil
}

func (h *fakeHost) Facts(context.Context, string) (gitctx.Facts, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return gitctx.Facts{}, errors.New(`host "box": the ssh connection is down`)
	}
	return h.facts, nil
}

func strp(s string) *string { return &s }

// TestHosts: a session on a host runs on the backend of its kind there,
// never the local one; its cwd is resolved there (relative to the
// host's root), its git facts and its context are the host's, the
// record names the host; facts the host cannot tell keep the last ones;
// an isolated session's place is asked of the places on its host, and
// its resume asks for it there again. An unknown host and a kind the host
// does not run are refused before anything is recorded.
func TestHosts(t *testing.T) {
	remote := fakebackend.New(fakebackend.Config{})
	box := &fakeHost{root: "/srv", dirs: map[string]bool{"/srv": true, "/srv/repo": true},
		facts:    gitctx.Facts{Root: strp("/srv/repo"), Name: strp("widgets"), Branch: strp("trunk")},
		backends: map[string]Backend{registry.DefaultKind: remote}}
	fp := &fakePlaces{}
	h := newHarness(t, func(c *Config) {
		c.Hosts = map[string]Host{"box": box}
		c.Places = fp
		c.Backends["plain"] = &plainBackend{f: fakebackend.New(fakebackend.Config{})} // here, not on the host
	})
	ctx := context.Background()

	cwd, err := h.m.Catalogue().ResolveCwd(ctx, "box", "repo")
	if err != nil || cwd != "/srv/repo" {
		t.Fatalf("Catalogue().ResolveCwd(box, repo) = %q, %v", cwd, err)
	}
	for _, tt := range []struct{ host, dir, want string }{
		{"box", "nowhere", `cwd "nowhere" on host box: /srv/nowhere is not an existing directory there`},
		{"far", "repo", `host "far" is not configured (hosts: box)`},
	} {
		if _, err := h.m.Catalogue().ResolveCwd(ctx, tt.host, tt.dir); !errors.Is(err, proxyerr.ErrInvalidParams) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Catalogue().ResolveCwd(%s, %s) = %v, want INVALID_PARAMS saying %q", tt.host, tt.dir, err, tt.want)
		}
	}

	s, err := h.m.Create(ctx, CreateRequest{Identity: "far-1", Cwd: cwd, Host: "box"})
	if err != nil {
		t.Fatal(err)
	}
	rec := s.Record()
	if diff := cmp.Diff([]string{"box", "/srv/repo", "widgets", "trunk"}, []string{rec.Host, rec.RepoRoot, rec.RepoName, rec.Branch}); diff != "" {
		t.Errorf("the record (-want +got):\n%s", diff)
	}
	if _, err := s.Run(ctx, Turn{Prompt: "hello", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fb.Requests()); n != 0 {
		t.Errorf("the local backend ran %d turns of a session on a host", n)
	}
	reqs := remote.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the host's backend ran %d turns, want 1", len(reqs))
	}
	dev := reqs[0].Params.DeveloperInstructions
	for _, want := range []string{"Repo:      widgets (/srv/repo)", "Branch:    trunk", "Cwd:       /srv/repo", "Host:      box (you run on this host"} {
		if !strings.Contains(dev, want) {
			t.Errorf("the context lacks %q:\n%s", want, dev)
		}
	}
	if reqs[0].Params.Cwd != "/srv/repo" {
		t.Errorf("the thread's cwd %q, want the host's", reqs[0].Params.Cwd)
	}

	// The branch changes there: the facts are read again after each turn,
	// so the turn after the next one's end names the new branch.
	box.mu.Lock()
	box.facts.Branch = strp("feature")
	box.mu.Unlock()
	for _, p := range []string{"turn two", "turn three"} {
		if _, err := s.Run(ctx, Turn{Prompt: p, Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
	}
	reqs = remote.Requests()
	if got := reqs[len(reqs)-1].Preamble; !strings.Contains(got, "Branch:    feature") {
		t.Errorf("the third turn's context:\n%s\nwant the branch read there after the second", got)
	}
	box.mu.Lock()
	box.facts.Branch = strp("trunk")
	box.mu.Unlock()

	// The host cannot tell now: the record keeps the last facts.
	box.mu.Lock()
	box.down = true
	box.mu.Unlock()
	if _, err := s.Run(ctx, Turn{Prompt: "again", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	if rec := s.Record(); rec.Branch != "feature" || rec.RepoRoot != "/srv/repo" {
		t.Errorf("after a turn the host could not tell facts for: root %q branch %q, want the last ones", rec.RepoRoot, rec.Branch)
	}
	if v := s.View(); v.Host != "box" {
		t.Errorf("agent_sessions' host %q", v.Host)
	}

	for _, tt := range []struct {
		name string
		r    CreateRequest
		want string
	}{
		{"unknown host", CreateRequest{Identity: "x1", Cwd: "/srv", Host: "far"}, `host "far" is not configured (hosts: box)`},
		{"a kind the host does not run", CreateRequest{Identity: "x2", Cwd: "/srv", Host: "box", Agent: "plain"}, `agent "plain" cannot run on host "box"`},
	} {
		if _, err := h.m.Create(ctx, tt.r); !errors.Is(err, proxyerr.ErrInvalidParams) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Create = %v, want INVALID_PARAMS saying %q", tt.name, err, tt.want)
		}
	}
	if n := len(h.m.Sessions()); n != 1 {
		t.Errorf("%d sessions after the refusals, want 1", n)
	}

	// Isolated on the host: its place is made there.
	iso, err := h.m.Create(ctx, CreateRequest{Identity: "far-iso", Cwd: "/srv/repo", Host: "box", Isolation: IsolationWorktree})
	if err != nil {
		t.Fatal(err)
	}
	h.m.Close(ctx, iso, false)
	if err := h.m.Rebind(iso, SourceClaude); err != nil {
		t.Fatal(err)
	}
	asked, _, _ := fp.snapshot()
	var hosts []string
	for _, r := range asked {
		hosts = append(hosts, r.Host+" resume="+map[bool]string{true: "yes", false: "no"}[r.Resume != nil])
	}
	if diff := cmp.Diff([]string{"box resume=no", "box resume=yes"}, hosts); diff != "" {
		t.Errorf("the places asked for (-want +got):\n%s", diff)
	}
}
