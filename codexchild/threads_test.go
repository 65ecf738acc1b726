package codexchild

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestPlan: which thread the mcp-server backend sends a turn to, and what
// a fresh thread in place of another is told.
func TestPlan(t *testing.T) {
	const old = "thread-old"
	long := strings.Repeat("x", 1200)
	base := backend.TurnRequest{ThreadID: old, Prompt: "go on", Preamble: "[ctx]\n", Seed: "[seed]",
		Params: backend.ThreadParams{DeveloperInstructions: "dev"}}
	tests := []struct {
		name      string
		setup     func(b *MCPServer)
		running   bool // a turn runs on the thread now
		req       backend.TurnRequest
		want      backend.TurnRequest
		inherited []string
		replaced  string // Result.Replaced: why a fresh thread
	}{
		{name: "new thread", req: backend.TurnRequest{Prompt: "hi", Preamble: "[ctx]\n"}, want: backend.TurnRequest{Prompt: "hi", Preamble: "[ctx]\n"}},
		{name: "thread run here continues, with the preamble",
			setup: func(b *MCPServer) { b.book.known[old] = true },
			req:   base, want: with(base, func(r *backend.TurnRequest) { r.Prompt = "[ctx]\ngo on" })},
		{name: "thread never run here: a fresh thread with the seed",
			req: base, want: with(base, func(r *backend.TurnRequest) { r.ThreadID = ""; r.Params.DeveloperInstructions = "[seed]\n\ndev" }),
			replaced: replacedUnknown},
		{name: "thread never run here, no seed",
			req:  with(base, func(r *backend.TurnRequest) { r.Seed = "" }),
			want: with(base, func(r *backend.TurnRequest) { r.ThreadID = ""; r.Seed = "" }), replaced: replacedUnknown},
		{name: "interrupted thread: a fresh thread with the last messages",
			setup: func(b *MCPServer) {
				b.book.known[old], b.book.tainted[old] = true, true
				b.book.said[old] = []string{"m1", "m2", "m3", "m4", "m5", long}
			},
			req: base,
			want: with(base, func(r *backend.TurnRequest) {
				r.ThreadID = ""
				r.Params.DeveloperInstructions = "[seed]\n\n[Previous thread thread-old was interrupted — your last messages there]\n" +
					"- m2\n- m3\n- m4\n- m5\n- " + strings.Repeat("x", 1000) + "…\n[End of previous thread]\n\ndev"
			}),
			inherited: []string{"m1", "m2", "m3", "m4", "m5", long}, replaced: replacedInterrupted},
		{name: "interrupted thread, SameThread: continues",
			setup: func(b *MCPServer) { b.book.known[old], b.book.tainted[old] = true, true },
			req:   with(base, func(r *backend.TurnRequest) { r.SameThread = true }),
			want:  with(base, func(r *backend.TurnRequest) { r.SameThread = true; r.Prompt = "[ctx]\ngo on" })},
		{name: "unknown thread, SameThread: sent as given",
			req:  with(base, func(r *backend.TurnRequest) { r.SameThread = true }),
			want: with(base, func(r *backend.TurnRequest) { r.SameThread = true; r.Prompt = "[ctx]\ngo on" })},
		{name: "a thread running here counts as run here",
			running: true,
			req:     base, want: with(base, func(r *backend.TurnRequest) { r.Prompt = "[ctx]\ngo on" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewMCPServer(Config{})
			if tt.setup != nil {
				tt.setup(b)
			}
			got, inherited, replaced := b.book.plan(tt.req, tt.running, b.log)
			if diff := cmp.Diff(tt.want, got, cmpTurnRequest); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if replaced != tt.replaced {
				t.Errorf("replaced = %q, want %q", replaced, tt.replaced)
			}
			if diff := cmp.Diff(tt.inherited, inherited); diff != "" {
				t.Errorf("inherited messages (-want +got):\n%s", diff)
			}
		})
	}
}

func with(r backend.TurnRequest, f func(*backend.TurnRequest)) backend.TurnRequest {
	f(&r)
	return r
}

// cmpTurnRequest compares TurnRequests without their functions.
var cmpTurnRequest = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool {
		switch p.Last().String() {
		case ".OnSent", ".OnAccepted", ".Release", ".OnResult", ".Handler", ".OnThread":
			return true
		}
		return false
	}, cmp.Ignore()),
}

// TestThreadPolicy runs the policy on both backends against mockcodex
// (which answers "MOCK_REPLY: <prompt>"): a turn that continues a thread
// carries the preamble; after an interrupt mcp-server continues on a fresh
// thread (without the preamble) while app-server keeps the thread;
// SameThread keeps an interrupted mcp-server thread.
func TestThreadPolicy(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		setup func(*testing.T) (Config, string)
	}{{KindMCPServer, setupMock}, {KindAppServer, setupMockApp}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			cfg, cwd := tc.setup(t)
			cfg.Kind = tc.kind
			b := newTestBackend(t, cfg)
			turn := func(req backend.TurnRequest) *backend.Result {
				t.Helper()
				req.Params = backend.ThreadParams{Cwd: cwd}
				res, err := b.Turn(ctxFor(t, 30*time.Second), req)
				if err != nil {
					t.Fatalf("Turn(%q): %v", req.Prompt, err)
				}
				return res
			}
			var told []string // OnThread
			onThread := func(id string) { told = append(told, id) }
			first := turn(backend.TurnRequest{Prompt: "hello", Preamble: "[ctx] ", OnThread: onThread})
			if first.Text != "MOCK_REPLY: hello" {
				t.Errorf("new thread: %q, want the prompt without the preamble", first.Text)
			}
			if diff := cmp.Diff([]string{first.ThreadID}, told); diff != "" || first.Replaced != "" {
				t.Errorf("new thread: OnThread got (-want +got):\n%s; Replaced = %q, want none", diff, first.Replaced)
			}
			told = nil
			again := turn(backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "again", Preamble: "[ctx] ", OnThread: onThread})
			if again.Text != "MOCK_REPLY: [ctx] again" || again.ThreadID != first.ThreadID || again.Replaced != "" || told != nil {
				t.Errorf("continued thread: %+v, OnThread %q; want the preamble on the same thread, not replaced, no OnThread", again, told)
			}
			told = nil
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			res, err := b.Turn(ctx, backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "SLOW=30 stop me", Params: backend.ThreadParams{Cwd: cwd}})
			if err == nil || res == nil || res.Status != "interrupted" {
				t.Fatalf("interrupted turn = %+v, %v", res, err)
			}
			after := turn(backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "after", Preamble: "[ctx] ", OnThread: onThread})
			switch tc.kind {
			case KindMCPServer:
				if after.ThreadID == first.ThreadID || after.Text != "MOCK_REPLY: after" || after.Replaced != replacedInterrupted {
					t.Errorf("after the interrupt: %+v, want a fresh thread without the preamble, replaced because interrupted", after)
				}
				if diff := cmp.Diff([]string{after.ThreadID}, told); diff != "" {
					t.Errorf("fresh thread: OnThread got (-want +got):\n%s", diff)
				}
				same := turn(backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "summary", Preamble: "[ctx] ", SameThread: true})
				if same.ThreadID != first.ThreadID || same.Text != "MOCK_REPLY: [ctx] summary" {
					t.Errorf("SameThread: %+v, want the interrupted thread", same)
				}
			case KindAppServer:
				if after.ThreadID != first.ThreadID || after.Text != "MOCK_REPLY: [ctx] after" || after.Replaced != "" || told != nil {
					t.Errorf("after the interrupt: %+v (OnThread %q), want the same thread", after, told)
				}
			}
		})
	}
}
