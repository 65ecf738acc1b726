package session

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// forkingBackend is the fake backend with a Forker: it forks into
// fork-of-<thread>, or refuses with refuse.
type forkingBackend struct {
	*fakebackend.Backend
	refuse error
	asked  []backend.ForkRequest
}

func (b *forkingBackend) Fork(_ context.Context, req backend.ForkRequest) (*backend.ForkResult, error) {
	b.asked = append(b.asked, req)
	if b.refuse != nil {
		return nil, b.refuse
	}
	return &backend.ForkResult{ThreadID: "fork-of-" + req.ThreadID, ForkedFrom: req.ThreadID}, nil
}

// TestFork: a fork of a live session is a new session of its own on the
// agent's fork of the source's thread, made with the fork's own thread
// parameters, idle, its parent recorded; its next turn continues that
// thread. A backend that cannot fork gets the source told instead; a fork
// the agent refuses keeps nothing.
func TestFork(t *testing.T) {
	var fb *forkingBackend
	h := newHarness(t, func(c *Config) {
		fb = &forkingBackend{Backend: c.Backends[registry.DefaultKind].(*fakebackend.Backend)}
		c.Backends = map[string]Backend{registry.DefaultKind: fb}
	})
	src := h.create("arch")
	if _, err := src.Run(context.Background(), Turn{Prompt: "remember", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	tell := func(*Session) (string, string) { t.Error("told, though the backend forks"); return "", "" }
	f, err := h.m.Fork(context.Background(), ForkRequest{Source: src, Identity: "dev-1", Tell: tell})
	if err != nil {
		t.Fatal(err)
	}
	rec := f.Record()
	want := &registry.Fork{AgentID: src.Record().AgentID, Thread: "thread-1", How: registry.ForkThread}
	if diff := cmp.Diff(want, rec.ForkedFrom); diff != "" || rec.BackendID != "fork-of-thread-1" || rec.Identity != "dev-1" || f.Detail(0).Status != "idle" {
		t.Errorf("fork = %+v (-want +got forked_from):\n%s", rec, diff)
	}
	if len(fb.asked) != 1 || fb.asked[0].Params.Cwd != h.dir {
		t.Errorf("forks asked %+v, want one with the fork's own parameters", fb.asked)
	}
	r, err := f.Run(context.Background(), Turn{Prompt: "go on", Source: SourceClaude})
	if err != nil || r.ThreadID != "fork-of-thread-1" {
		t.Errorf("the fork's turn = %+v, %v; want it on the forked thread", r, err)
	}
	if got := h.reg.Registry.List(registry.Filter{}); len(got) != 2 {
		t.Errorf("%d records, want 2", len(got))
	}

	// The agent refuses: nothing kept, the identity free.
	fb.refuse = fmt.Errorf("codexchild: fork thread thread-1: %w", backend.ErrForkRefused)
	if _, err := h.m.Fork(context.Background(), ForkRequest{Source: src, Identity: "dev-2", Tell: tell}); !errors.Is(err, proxyerr.ErrInvalidSessionParams) || !errors.Is(err, backend.ErrForkRefused) {
		t.Errorf("refused fork: %v, want INVALID_SESSION_PARAMS wrapping ErrForkRefused", err)
	}
	if h.m.ByIdentity("dev-2") != nil {
		t.Error("a refused fork kept its identity")
	}

	// A backend that cannot fork: the source is told, in front of the
	// fork's first prompt only.
	fb.refuse = fmt.Errorf("codexchild: fork: %w", backend.ErrUnsupported)
	told, err := h.m.Fork(context.Background(), ForkRequest{Source: src, Identity: "dev-3",
		Tell: func(*Session) (string, string) { return "TOLD\n\n", registry.ForkTranscript }})
	if err != nil || told.Record().ForkedFrom.How != registry.ForkTranscript || told.Record().BackendID != "" {
		t.Fatalf("fork told = %+v, %v", told.Record(), err)
	}
	for _, p := range []string{"first", "second"} {
		if _, err := told.Run(context.Background(), Turn{Prompt: p, Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := h.fb.Requests()
	if got := []string{reqs[len(reqs)-2].Prompt, reqs[len(reqs)-1].Prompt}; got[0] != "TOLD\n\nfirst" || got[1] != "second" {
		t.Errorf("the told fork's prompts = %q, want the source told in the first only", got)
	}
}
