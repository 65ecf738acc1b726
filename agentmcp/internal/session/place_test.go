package session

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// fakePlaces is a Places that records what it is asked and makes places
// of facts alone (the real one, over git, is tested through the binary).
type fakePlaces struct {
	mu       sync.Mutex
	asked    []PlaceRequest
	released []string // "agent_id keep=true|false"
	ended    []string // agent_ids whose turn ended
	fail     error    // what Place answers, when set
	dirty    bool     // Release without keep keeps the place
}

func (f *fakePlaces) Place(_ context.Context, req PlaceRequest) (*Place, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	if f.fail != nil {
		return nil, f.fail
	}
	path := "/repo/.atm/worktrees/" + req.Identity
	return &Place{AgentID: req.AgentID, Identity: req.Identity, Name: req.Identity, Path: path, Cwd: path + "/src",
		Branch: "atm/" + req.Identity, Base: "0123456789abcdef0123", BaseRef: "HEAD", Source: "/repo", Repo: "/repo/.git",
		PortBase: 20010, PortCount: 10, Env: map[string]string{"ATM_WORKTREE": path, "ATM_BRANCH": "atm/" + req.Identity},
		WritableRoots: []string{"/repo/.git/worktrees/" + req.Identity, "/repo/.git/objects"}, Resumed: req.Resume != nil}, nil
}

func (f *fakePlaces) Release(_ context.Context, p *Place, keep bool) (Released, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, p.AgentID+" keep="+map[bool]string{true: "true", false: "false"}[keep])
	if f.dirty {
		return Released{Path: p.Path, Branch: p.Branch, Dirty: 1, Stat: "1 files changed, 1 insertions(+), 0 deletions(-)"}, nil
	}
	return Released{Removed: true, Path: p.Path, Branch: p.Branch}, nil
}

func (f *fakePlaces) TurnEnded(p *Place) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, p.AgentID)
}

func (f *fakePlaces) snapshot() (asked []PlaceRequest, released, ended []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]PlaceRequest(nil), f.asked...), append([]string(nil), f.released...), append([]string(nil), f.ended...)
}

// TestPlaceLifecycle: an isolated session gets its place before its record
// (the record names it, its cwd is the place's), every turn runs there
// with the place's environment, writable roots and context, each ended
// turn is told; agent_close releases the place (kept: it holds work) and
// says so; a resume re-enters the recorded place; a shutdown only lets go
// of it.
func TestPlaceLifecycle(t *testing.T) {
	fp := &fakePlaces{dirty: true}
	h := newHarness(t, func(c *Config) {
		c.Places = fp
		c.Defaults = ThreadDefaults{Sandbox: "workspace-write"}
	})
	st, _ := h.m.Catalogue().Defaults("", "")
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: "alice", Cwd: filepath.Join(h.dir), Isolation: IsolationWorktree, Base: "main", Settings: st})
	if err != nil {
		t.Fatal(err)
	}
	rec := s.Record()
	asked, _, _ := fp.snapshot()
	wantAsk := []PlaceRequest{{AgentID: rec.AgentID, Identity: "alice", Cwd: h.dir, Base: "main"}}
	if diff := cmp.Diff(wantAsk, asked); diff != "" {
		t.Errorf("Place asked (-want +got):\n%s", diff)
	}
	wantWT := &registry.Worktree{Name: "alice", Path: "/repo/.atm/worktrees/alice", Branch: "atm/alice", Base: "0123456789abcdef0123",
		BaseRef: "HEAD", Source: "/repo", PortBase: 20010, PortCount: 10}
	if diff := cmp.Diff(wantWT, rec.Worktree); diff != "" {
		t.Errorf("recorded worktree (-want +got):\n%s", diff)
	}
	if rec.Cwd != "/repo/.atm/worktrees/alice/src" {
		t.Errorf("recorded cwd %q, want the place's", rec.Cwd)
	}
	for i, prompt := range []string{"one", "two"} {
		if _, err := s.Run(context.Background(), Turn{Prompt: prompt, Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
		req := h.fb.Requests()[i]
		if req.Params.Cwd != rec.Cwd || req.Params.Env["ATM_BRANCH"] != "atm/alice" || len(req.Params.WritableRoots) != 2 {
			t.Errorf("turn %d params: cwd %q env %v roots %v", i, req.Params.Cwd, req.Params.Env, req.Params.WritableRoots)
		}
		for _, want := range []string{"Worktree:  /repo/.atm/worktrees/alice (your own checkout of /repo, on branch atm/alice from 0123456789ab;",
			"Ports:     20010-20019 are yours (ATM_PORT_BASE=20010, ATM_PORT_COUNT=10"} {
			if !strings.Contains(req.Params.DeveloperInstructions+req.Preamble, want) {
				t.Errorf("turn %d: the context lacks %q", i, want)
			}
		}
	}
	poll.Until(t, "two ended turns told", func() bool { _, _, e := fp.snapshot(); return len(e) == 2 })

	out := h.m.Close(context.Background(), s, false)
	want := &Released{Path: "/repo/.atm/worktrees/alice", Branch: "atm/alice", Dirty: 1, Stat: "1 files changed, 1 insertions(+), 0 deletions(-)"}
	if diff := cmp.Diff(want, out.Released); diff != "" {
		t.Errorf("close outcome's Released (-want +got):\n%s", diff)
	}
	if got := out.Record.Worktree; got == nil || got.Released != "kept" || got.Stat != want.Stat || got.PortCount != 0 {
		t.Errorf("closed record's worktree %+v, want kept with its stat and no ports", got)
	}
	if s.Place() != nil {
		t.Error("a closed session still has its place")
	}

	if err := h.m.Rebind(s, SourceClaude); err != nil {
		t.Fatal(err)
	}
	asked, released, _ := fp.snapshot()
	if len(released) != 1 {
		t.Errorf("the resume released %v: nothing but the close's", released)
	}
	if len(asked) != 2 || asked[1].Resume == nil || asked[1].Resume.Path != wantWT.Path || asked[1].AgentID != rec.AgentID {
		t.Errorf("the resume asked %+v, want the recorded worktree", asked)
	}
	if p := s.Place(); p == nil || !p.Resumed {
		t.Errorf("resumed place %+v", p)
	}
	if got := s.Record().Worktree; got == nil || got.Released != "" || got.PortCount != 10 {
		t.Errorf("resumed record's worktree %+v", got)
	}
	h.m.Shutdown()
	_, released, _ = fp.snapshot()
	if diff := cmp.Diff([]string{rec.AgentID + " keep=false", rec.AgentID + " keep=true"}, released); diff != "" {
		t.Errorf("releases (-want +got):\n%s", diff)
	}
	if got := s.Record().Worktree; got == nil || got.Released != "" {
		t.Errorf("after a shutdown the record's worktree is %+v: it waits for a resume", got)
	}
}

// TestPlaceRefused: a start whose place cannot be made fails with the
// place's error and leaves nothing: no record, the identity free.
func TestPlaceRefused(t *testing.T) {
	refusal := proxyerr.New(proxyerr.ErrInvalidParams, nil, "not a git repository")
	fp := &fakePlaces{fail: refusal}
	h := newHarness(t, func(c *Config) { c.Places = fp })
	_, err := h.m.Create(context.Background(), CreateRequest{Identity: "alice", Cwd: h.dir, Isolation: IsolationWorktree})
	if !errors.Is(err, refusal) {
		t.Fatalf("Create = %v, want the place's refusal", err)
	}
	if n := len(h.reg.List(registry.Filter{})); n != 0 {
		t.Errorf("%d session(s) recorded", n)
	}
	s := h.create("alice") // the identity is free; without isolation no place is asked for
	if s.Place() != nil || s.Record().Worktree != nil {
		t.Error("a session without isolation has a place")
	}
	if asked, _, _ := fp.snapshot(); len(asked) != 1 {
		t.Errorf("Place asked %d times", len(asked))
	}
}

// TestPlaceNotRecorded: a place made for a start whose record cannot be
// written (another process holds the identity) is released at once.
func TestPlaceNotRecorded(t *testing.T) {
	fp := &fakePlaces{}
	h := newHarness(t, func(c *Config) { c.Places = fp })
	other, err := registry.Open(registry.Config{Home: h.dir, Team: "dev", Identity: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Add(registry.Session{Identity: "alice", Cwd: h.dir, Status: registry.StatusIdle}); err != nil {
		t.Fatal(err)
	}
	_, err = h.m.Create(context.Background(), CreateRequest{Identity: "alice", Cwd: h.dir, Isolation: IsolationWorktree})
	if !errors.Is(err, proxyerr.ErrIdentityConflict) {
		t.Fatalf("Create = %v, want IDENTITY_CONFLICT", err)
	}
	asked, released, _ := fp.snapshot()
	if len(asked) != 1 || len(released) != 1 || released[0] != asked[0].AgentID+" keep=false" {
		t.Errorf("asked %+v, released %v: want the place released", asked, released)
	}
}

// TestPlaceReadOnly: a read-only thread of an isolated session gets the
// place's environment but never its writable roots.
func TestPlaceReadOnly(t *testing.T) {
	fp := &fakePlaces{}
	h := newHarness(t, func(c *Config) {
		c.Places = fp
		c.Defaults = ThreadDefaults{Sandbox: ReadOnly}
	})
	st, _ := h.m.Catalogue().Defaults("", "")
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: "ro", Cwd: h.dir, Isolation: IsolationWorktree, Settings: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), Turn{Prompt: "look", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	p := h.fb.Requests()[0].Params
	if sb := codexOptions(p).Sandbox; sb != ReadOnly || len(p.WritableRoots) != 0 || p.Env["ATM_BRANCH"] != "atm/ro" {
		t.Errorf("read-only params: sandbox %q roots %v env %v", sb, p.WritableRoots, p.Env)
	}
}

// TestPlaceHandOver: a hand-over lets go of the place (the next proxy
// re-enters it) without removing it.
func TestPlaceHandOver(t *testing.T) {
	fp := &fakePlaces{}
	h := newHarness(t, func(c *Config) { c.Places = fp })
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: "bob", Cwd: h.dir, Isolation: IsolationWorktree})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h.m.HandOver(ctx, "141a23ea")
	_, released, _ := fp.snapshot()
	if diff := cmp.Diff([]string{s.Record().AgentID + " keep=true"}, released); diff != "" {
		t.Errorf("releases (-want +got):\n%s", diff)
	}
	if s.Record().Worktree == nil {
		t.Error("the handed-over record lost its worktree")
	}
}
