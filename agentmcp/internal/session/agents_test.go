package session

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// plainBackend is a newcomer's backend: the fake's turns, and none of the
// seam's capabilities (no sandbox, no settings of its own, one process per
// thread, no name). Its MailPaused says paused.
type plainBackend struct {
	f      *fakebackend.Backend
	paused atomic.Bool
}

func (p *plainBackend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	return p.f.Turn(ctx, req)
}
func (p *plainBackend) Interrupt(ctx context.Context, thread string) error {
	return p.f.Interrupt(ctx, thread)
}
func (p *plainBackend) Status() backend.Status { return backend.Status{Protocol: "plain"} }
func (p *plainBackend) MailPaused() bool       { return p.paused.Load() }

// kindsHarness is a harness whose Manager has the fake Codex under the
// default kind and a plainBackend under "plain".
func kindsHarness(t *testing.T, modify func(*Config)) (*harness, *plainBackend) {
	plain := &plainBackend{f: fakebackend.New(fakebackend.Config{})}
	h := newHarness(t, func(c *Config) {
		c.Backends["plain"] = plain
		if modify != nil {
			modify(c)
		}
	})
	return h, plain
}

// TestCatalogue: the kinds there are, the default first; how each is
// named, what it takes of its own and which settings a new session of it
// starts with, all from its backend and the configuration.
func TestCatalogue(t *testing.T) {
	h, _ := kindsHarness(t, func(c *Config) {
		c.Backends["alpha"] = &plainBackend{f: fakebackend.New(fakebackend.Config{})}
		c.Defaults = ThreadDefaults{Model: "gpt-5", Sandbox: "workspace-write"}
		c.Roles = map[string]ThreadDefaults{"ro": {Sandbox: ReadOnly}}
	})
	cat := h.m.Catalogue()
	if diff := cmp.Diff([]string{registry.DefaultKind, "alpha", "plain"}, cat.Agents()); diff != "" {
		t.Errorf("Agents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(codexchild.Settings, cat.Settings()); diff != "" {
		t.Errorf("Settings (-want +got):\n%s", diff)
	}
	tests := []struct {
		kind, role string
		name       string
		own        []string
		want       ThreadSettings
		err        error
	}{
		{"", "", "Codex", codexchild.Settings, ThreadSettings{Model: "gpt-5", Sandbox: "workspace-write"}, nil},
		{registry.DefaultKind, "ro", "Codex", codexchild.Settings, ThreadSettings{Model: "gpt-5", Sandbox: ReadOnly}, nil},
		{"plain", "", "plain", nil, ThreadSettings{}, nil},
		{"plain", "ro", "plain", nil, ThreadSettings{}, nil},
		{"plain", "nope", "plain", nil, ThreadSettings{Model: "gpt-5", Sandbox: "workspace-write"}, proxyerr.ErrInvalidSessionParams},
	}
	for _, tt := range tests {
		if got := cat.Name(tt.kind); got != tt.name {
			t.Errorf("Name(%q) = %q, want %q", tt.kind, got, tt.name)
		}
		if diff := cmp.Diff(tt.own, cat.Own(tt.kind)); diff != "" {
			t.Errorf("Own(%q) (-want +got):\n%s", tt.kind, diff)
		}
		got, err := cat.Defaults(tt.kind, tt.role)
		if !errors.Is(err, tt.err) {
			t.Errorf("Defaults(%q, %q) error %v, want %v", tt.kind, tt.role, err, tt.err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Defaults(%q, %q) (-want +got):\n%s", tt.kind, tt.role, diff)
		}
	}
}

// TestKindCreate: a new session must be of a kind there is and ask only
// settings its kind takes; the refusal names the setting, the kind and
// whose setting it is. Nothing is recorded for a refused one.
func TestKindCreate(t *testing.T) {
	h, _ := kindsHarness(t, nil)
	tests := []struct {
		agent    string
		settings ThreadSettings
		want     string // "" for a session
	}{
		{"", ThreadSettings{Sandbox: "workspace-write", Config: map[string]any{"model_verbosity": "low"}}, ""},
		{"plain", ThreadSettings{Model: "m1", DeveloperInstructions: "be brief"}, ""},
		{"plain", ThreadSettings{Sandbox: "workspace-write"}, `sandbox is a Codex setting: agent "plain" does not take it (Codex-only: approval-policy, compact-prompt, config, profile, reasoning-effort, sandbox); leave it out`},
		{"plain", ThreadSettings{Config: map[string]any{"x": 1}}, `config is a Codex setting: agent "plain" does not take it`},
		{"other", ThreadSettings{}, `agent "other" is not configured (agents: codex, plain)`},
	}
	for i, tt := range tests {
		identity := "id" + string(rune('a'+i))
		s, err := h.m.Create(context.Background(), CreateRequest{Identity: identity, Cwd: h.dir, Agent: tt.agent, Settings: tt.settings})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %+v: %v", tt.agent, tt.settings, err)
		case tt.want == "" && s.Record().Kind() != firstNonEmpty(tt.agent, registry.DefaultKind):
			t.Errorf("%s: the record's kind is %q", tt.agent, s.Record().Kind())
		case tt.want != "" && (err == nil || !errors.Is(err, proxyerr.ErrInvalidParams) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %+v: error %v, want INVALID_PARAMS with %q", tt.agent, tt.settings, err, tt.want)
		case tt.want != "" && h.m.ByIdentity(identity) != nil:
			t.Errorf("%s: a refused session was kept", tt.agent)
		}
	}
}

// TestKindTurns: a session's turns run on its own kind's backend with the
// parameters that backend takes: the default kind's Codex options, held
// to the read-only policy as a sandboxed backend's; none for the plain
// kind. A plain agent's failures have its own words (one process per
// session), a read-only session's commands are denied without asking
// since no sandbox holds it, and another kind's restart or mail pause
// leaves it alone.
func TestKindTurns(t *testing.T) {
	h, plain := kindsHarness(t, func(c *Config) {
		c.Defaults = ThreadDefaults{Sandbox: ReadOnly}
		c.ApprovalFallback = "approve"
	})
	codexSession := h.create("arch")
	plainSession, err := h.m.Create(context.Background(), CreateRequest{Identity: "rev", Cwd: h.dir, Agent: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Session{codexSession, plainSession} {
		if _, err := s.Run(context.Background(), Turn{Prompt: "hello", Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.fb.Requests()); n != 1 {
		t.Errorf("the default kind's backend ran %d turns, want 1", n)
	}
	pr := plain.f.Requests()
	if len(pr) != 1 || pr[0].Params.Options != nil {
		t.Fatalf("the plain backend's turns: %+v, want one without options", pr)
	}
	if o := codexOptions(h.fb.Requests()[0].Params); o.Sandbox != ReadOnly {
		t.Errorf("the Codex session's options: %+v, want the read-only sandbox the policy holds", o)
	}

	got := <-runAsync(plainSession, Turn{Prompt: "APPROVE", Source: SourceClaude})
	if !strings.HasPrefix(got, "decision: deny "+readOnlyAgentDenial) {
		t.Errorf("the plain agent's command under the read-only policy: %q, want denied without asking", got)
	}
	got = <-runAsync(codexSession, Turn{Prompt: "APPROVE", Source: SourceClaude})
	if !strings.HasPrefix(got, "decision: deny "+readOnlyDenial) {
		t.Errorf("the Codex session's command: %q, want the sandboxed kind's denial", got)
	}

	_, err = plainSession.Run(context.Background(), Turn{Prompt: "UNREACHABLE", Source: SourceClaude})
	if !errors.Is(err, proxyerr.ErrRequestTimeout) || !strings.Contains(err.Error(), "plain turn timed out after 2s") ||
		!strings.Contains(err.Error(), "the next turn of the session starts a new plain process") {
		t.Errorf("the plain agent's timeout: %v", err)
	}
	_, err = codexSession.Run(context.Background(), Turn{Prompt: "UNREACHABLE", Source: SourceClaude})
	if !errors.Is(err, proxyerr.ErrRequestTimeout) || !strings.Contains(err.Error(), "codex turn timed out after 2s") ||
		strings.Contains(err.Error(), "next turn of the session") {
		t.Errorf("the Codex session's timeout: %v", err)
	}

	if n := h.m.AfterRestart(h.fb); n != 1 {
		t.Errorf("AfterRestart of the default kind's backend continued %d sessions, want 1 (not the plain one)", n)
	}
	plain.paused.Store(true)
	if !plainSession.MailPaused() || codexSession.MailPaused() {
		t.Errorf("mail paused: plain %v, codex %v; want only the session of the paused backend", plainSession.MailPaused(), codexSession.MailPaused())
	}
}
