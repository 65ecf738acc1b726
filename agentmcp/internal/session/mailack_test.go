package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestTryMailReportsAcceptance: a mail turn reports its mail delivered
// (the mail layer then marks it read) once Codex acknowledged the turn, or
// when it ended unacknowledged on a child that lives on (it has the
// request); a child that died before acknowledging it reports false, so
// that the mail is offered again after the restart.
func TestTryMailReportsAcceptance(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		finish func(h *harness, s *Session)
		want   []bool
	}{
		{"acknowledged", "hello", func(*harness, *Session) {}, []bool{true}},
		{"the child died before acknowledging", "DIE", func(*harness, *Session) {}, []bool{false}},
		{"the child died after acknowledging", "DIE_ACCEPTED", func(*harness, *Session) {}, []bool{true}},
		{"interrupted on a live child", "BLOCK", func(_ *harness, s *Session) {
			if ok, err := s.Interrupt(context.Background()); !ok || err != nil {
				t.Errorf("Interrupt = %v, %v", ok, err)
			}
		}, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			s := h.create("arch")
			if _, err := s.Run(context.Background(), Turn{Prompt: "first", Source: SourceClaude}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []bool
			ended := make(chan struct{})
			ok := s.TryMailThen(tt.prompt, func(sent bool) {
				mu.Lock()
				got = append(got, sent)
				mu.Unlock()
			}, func(*TurnResult, error) { close(ended) })
			if !ok {
				t.Fatal("TryMailThen on an idle session = false")
			}
			poll.Until(t, "the mail turn to run", func() bool { return len(h.fb.Requests()) == 2 })
			tt.finish(h, s)
			<-ended
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reports (-want +got):\n%s", diff)
			}
		})
	}
}

// auditRecorder is an AuditLog in memory.
type auditRecorder struct {
	mu      sync.Mutex
	entries []registry.Entry
}

func (a *auditRecorder) Append(e registry.Entry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	return nil
}

func (a *auditRecorder) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}

// TestTurnsRefusedWhileCodexDown: while the backend says Codex is down
// (Unavailable), every turn a client asks for fails at once with the
// backend's error, before anything is queued, sent, written to the
// registry or audited; once Codex is back, turns run again. The
// persister's debounced writes settle on testing/synctest's clock.
func TestTurnsRefusedWhileCodexDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		audit := &auditRecorder{}
		h := newHarness(t, func(c *Config) { c.Audit = NewAuditor(audit, nil) })
		s := h.create("arch")
		if _, err := s.Run(context.Background(), Turn{Prompt: "first", Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
		thread := s.Record().BackendID
		settled := func() { // the debounced registry writes of what came before
			time.Sleep(persistDebounce)
			synctest.Wait()
		}
		settled()
		down := proxyerr.New(proxyerr.ErrChildProcessDead, nil, "codex child process is not running: killed by signal killed (call agent_restart_codex to start a new one)")
		h.fb.SetDown(down)

		type state struct{ Requests, RegistryWrites, Audit int }
		now := func() state { return state{len(h.fb.Requests()), h.reg.count(), audit.count()} }
		before := now()
		call := &fakeCall{}
		turns := []struct {
			name string
			run  func() error
		}{
			{"Run", func() error {
				_, err := s.Run(context.Background(), Turn{Prompt: "x", Call: call, Source: SourceClaude})
				return err
			}},
			{"RunBackground", func() error { _, err := s.RunBackground(Turn{Prompt: "x", Source: SourceClaude}); return err }},
			{"Start", func() error { _, err := s.Start(Turn{Prompt: "x", Source: SourceClaude}); return err }},
			{"AnonymousReply", func() error {
				_, err := h.m.AnonymousReply(context.Background(), call, "019a0000-0000-7000-8000-000000000000", "x")
				return err
			}},
		}
		for _, tt := range turns {
			if err := tt.run(); !errors.Is(err, down) {
				t.Errorf("%s while Codex is down = %v, want the backend's %v", tt.name, err, down)
			}
		}
		settled()
		if diff := cmp.Diff(before, now()); diff != "" {
			t.Errorf("turns while Codex is down changed something (-before +after):\n%s", diff)
		}
		if d := s.Detail(0); d.Busy || s.Record().BackendID != thread {
			t.Errorf("session after the refused turns: busy %v, thread %q; want idle on %q", d.Busy, s.Record().BackendID, thread)
		}

		h.fb.SetDown(nil)
		if r, err := s.Run(context.Background(), Turn{Prompt: "back", Source: SourceClaude}); err != nil || r.Text != "echo: back" {
			t.Errorf("Run once Codex is back = %+v, %v", r, err)
		}
	})
}
