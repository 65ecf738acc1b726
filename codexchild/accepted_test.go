package codexchild

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestOnAccepted: OnAccepted is called once the child has acknowledged the
// turn (app-server's turn/start response, mcp-server's first event or its
// result), on both protocols, never after Turn returned; a child that read
// the request and died before a word about it never calls it, while
// OnSent was called (the request was written). Mail is marked read at
// OnAccepted (FR-8.12), so such a turn's mail is offered again.
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
		fake  Config // a child that reads the turn and dies without answering
	}{
		{"mcp-server", setupMock, Config{Bin: exe, Kind: KindMCPServer, Env: []string{fakeChildEnv + "=dieonturn", "GORACE=atexit_sleep_ms=0"}}},
		{"app-server", setupMockApp, Config{Bin: exe, Kind: KindAppServer, Env: []string{fakeAppEnv + "=dieonturn", "GORACE=atexit_sleep_ms=0"}}},
	}
	cases := []struct {
		name   string
		prompt string
		fake   bool
		want   outcome
	}{
		{"answered", "hello", false, outcome{Sent: 1, Accepted: 1, Text: "MOCK_REPLY: hello"}},
		{"died after the first events", "CRASH=SIGKILL", false, outcome{Sent: 1, Accepted: 1, Exited: true}},
		{"died before a word about the turn", "hello", true, outcome{Sent: 1, Exited: true}},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				cfg, cwd := p.setup(t)
				if tc.fake {
					cfg = p.fake
				}
				b := newTestBackend(t, cfg)
				var mu sync.Mutex
				var got outcome
				var returned atomic.Bool
				res, err := b.Turn(ctxFor(t, 30*time.Second), TurnRequest{
					Prompt: tc.prompt, Params: ThreadParams{Cwd: cwd},
					OnSent: func() { mu.Lock(); got.Sent++; mu.Unlock() },
					OnAccepted: func() {
						mu.Lock()
						got.Accepted++
						got.AfterReturn = got.AfterReturn || returned.Load()
						mu.Unlock()
					},
				})
				returned.Store(true)
				time.Sleep(50 * time.Millisecond) // room for a (wrong) late call
				var ee *ExitError
				got.Exited = errors.As(err, &ee)
				if err != nil && !got.Exited {
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
