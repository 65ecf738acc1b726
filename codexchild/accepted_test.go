package codexchild

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// fakeLate is how long the fake children's "acklate" and "dielate" wait
// after reading a turn.
const fakeLate = 400 * time.Millisecond

// TestOnAccepted: OnAccepted is called once the child has acknowledged the
// turn (app-server's turn/start response, mcp-server's first event or its
// result), on both protocols, never after Turn returned; a child that read
// the request and died before a word about it never calls it, while
// OnSent was called (the request was written). A turn interrupted before
// its acknowledgement waits for it a while: an acknowledgement that comes
// calls OnAccepted, a child that dies first makes Turn fail with an
// *ExitError. Mail is marked read at OnAccepted (FR-8.12), so such a
// turn's mail is offered again.
func TestOnAccepted(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Sent, Accepted int
		AfterReturn    bool // OnAccepted ran after Turn had returned
		Exited         bool // Turn failed with an *ExitError
		Text           string
	}
	protocols := []struct {
		name  string
		setup func(*testing.T) (Config, string)
		fake  func(mode string) Config // a scripted child (stale_test.go, appfake_test.go)
	}{
		{"mcp-server", setupMock, func(mode string) Config {
			return Config{Bin: exe, Kind: KindMCPServer, Env: []string{fakeChildEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}}
		}},
		{"app-server", setupMockApp, func(mode string) Config {
			return Config{Bin: exe, Kind: KindAppServer, Env: []string{fakeAppEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}}
		}},
	}
	cases := []struct {
		name      string
		prompt    string
		fake      string // the scripted child's mode; "": mockcodex
		interrupt bool   // cancel the turn's ctx before the child says a word
		want      outcome
	}{
		{"answered", "hello", "", false, outcome{Sent: 1, Accepted: 1, Text: "MOCK_REPLY: hello"}},
		{"died after the first events", "CRASH=SIGKILL", "", false, outcome{Sent: 1, Accepted: 1, Exited: true}},
		{"died before a word about the turn", "hello", "dieonturn", false, outcome{Sent: 1, Exited: true}},
		{"interrupted, then acknowledged", "hello", "acklate", true, outcome{Sent: 1, Accepted: 1, Text: "codex turn interrupted"}},
		{"interrupted, then died before a word", "hello", "dielate", true, outcome{Sent: 1, Exited: true}},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				cfg, cwd := p.setup(t)
				if tc.fake != "" {
					cfg = p.fake(tc.fake)
				}
				b := newTestBackend(t, cfg)
				var mu sync.Mutex
				var got outcome
				var returned atomic.Bool
				ctx, cancel := context.WithCancel(ctxFor(t, 30*time.Second))
				defer cancel()
				req := backend.TurnRequest{
					Prompt: tc.prompt, Params: backend.ThreadParams{Cwd: cwd},
					OnSent: func() { mu.Lock(); got.Sent++; mu.Unlock() },
					OnAccepted: func() {
						mu.Lock()
						got.Accepted++
						got.AfterReturn = got.AfterReturn || returned.Load()
						mu.Unlock()
					},
				}
				if tc.interrupt {
					sent := req.OnSent
					req.OnSent = func() {
						sent()
						time.AfterFunc(50*time.Millisecond, cancel)
					}
				}
				res, err := b.Turn(ctx, req)
				returned.Store(true)
				time.Sleep(fakeLate) // room for a (wrong) late call
				var ee *backend.ExitError
				got.Exited = errors.As(err, &ee)
				if err != nil && !got.Exited && !(tc.interrupt && errors.Is(err, context.Canceled)) {
					t.Fatalf("Turn: %v", err)
				}
				if res != nil {
					got.Text = res.Text
				}
				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("turn (-want +got):\n%s", diff)
				}
			})
		}
	}
}
