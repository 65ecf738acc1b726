package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// steeringBackend is the fake backend with a Steerer: it records what it
// was given and answers with refuse (nil: taken).
type steeringBackend struct {
	*fakebackend.Backend
	mu     sync.Mutex
	texts  []string
	refuse error
}

func (b *steeringBackend) Steer(_ context.Context, threadID, text string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.texts = append(b.texts, threadID+": "+text)
	return b.refuse
}

func (b *steeringBackend) steered() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.texts...)
}

// steeringHarness is a harness whose backend steers, with a session whose
// BLOCK turn runs on thread-1.
func steeringHarness(t *testing.T, refuse error) (*harness, *steeringBackend, *Session) {
	var sb *steeringBackend
	h := newHarness(t, func(c *Config) {
		sb = &steeringBackend{Backend: c.Backends[registry.DefaultKind].(*fakebackend.Backend), refuse: refuse}
		c.Backends = map[string]Backend{registry.DefaultKind: sb}
	})
	s := h.create("arch")
	if _, err := s.Run(context.Background(), Turn{Prompt: "first", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunBackground(Turn{Prompt: "BLOCK", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the BLOCK turn to run", func() bool { return len(h.fb.Requests()) == 2 })
	return h, sb, s
}

// TestTrySteerMail: mail for a busy session goes into its running turn
// when the backend steers: reported sent once the agent took it, its
// senders told when that turn ends; mail the agent refused is reported not
// sent, and nothing more is steered into that turn. An idle session, and a
// backend without Steerer, take no steer.
func TestTrySteerMail(t *testing.T) {
	t.Run("taken", func(t *testing.T) {
		h, sb, s := steeringHarness(t, nil)
		sent, ended := make(chan bool, 2), make(chan string, 2)
		if !s.TrySteerMail("<team-mail>stop</team-mail>", func(ok bool) { sent <- ok }, func(r *TurnResult, err error) { ended <- r.Text }) {
			t.Fatal("TrySteerMail on a busy session = false")
		}
		if ok := <-sent; !ok {
			t.Fatal("reported not sent")
		}
		if diff := cmp.Diff([]string{"thread-1: <team-mail>stop</team-mail>"}, sb.steered()); diff != "" {
			t.Errorf("steered (-want +got):\n%s", diff)
		}
		select {
		case e := <-ended:
			t.Fatalf("ended before the turn did: %q", e)
		case <-time.After(50 * time.Millisecond):
		}
		h.fb.Answer("answered both")
		if got := <-ended; got != "answered both" {
			t.Errorf("ended with %q, want the running turn's result", got)
		}
		if n := len(h.fb.Requests()); n != 2 {
			t.Errorf("%d turns ran, want 2: the mail was no turn of its own", n)
		}
		if s.TrySteerMail("late", func(bool) {}, nil) {
			t.Error("TrySteerMail on an idle session = true")
		}
	})
	t.Run("refused", func(t *testing.T) {
		h, sb, s := steeringHarness(t, &backend.SteerError{ThreadID: "thread-1", Why: backend.SteerTurnEnded})
		sent := make(chan bool, 2)
		if !s.TrySteerMail("mail 1", func(ok bool) { sent <- ok }, nil) {
			t.Fatal("TrySteerMail = false")
		}
		if ok := <-sent; ok {
			t.Fatal("a refused steer reported sent")
		}
		if s.TrySteerMail("mail 2", func(bool) {}, nil) {
			t.Error("a second steer into the turn that refused one was tried")
		}
		if n := len(sb.steered()); n != 1 {
			t.Errorf("%d steers asked, want 1", n)
		}
		h.fb.Answer("done")
	})
	t.Run("no Steerer", func(t *testing.T) {
		h := newHarness(t, nil)
		s := h.create("arch")
		if _, err := s.Run(context.Background(), Turn{Prompt: "first", Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RunBackground(Turn{Prompt: "BLOCK", Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the BLOCK turn to run", func() bool { return len(h.fb.Requests()) == 2 })
		if s.TrySteerMail("mail", func(bool) { t.Error("report called") }, nil) {
			t.Error("TrySteerMail on a backend without Steerer = true")
		}
		h.fb.Answer("done")
	})
}

// TestSteerTurn: the client's reply steered into the running turn waits
// for that turn and gets its result, Steered; a refusal leaves the reply
// to run as a turn of its own (no wait), and an error of unknown outcome
// is an error.
func TestSteerTurn(t *testing.T) {
	t.Run("taken", func(t *testing.T) {
		h, _, s := steeringHarness(t, nil)
		wait, err := s.SteerTurn(Turn{Prompt: "and the tests", Source: SourceClaude})
		if err != nil || wait == nil {
			t.Fatalf("SteerTurn = %v, %v", wait != nil, err)
		}
		go func() { h.fb.Answer("answered") }()
		r, err := wait(context.Background())
		if err != nil || r.Text != "answered" || !r.Steered {
			t.Errorf("wait = %+v, %v; want the running turn's result, steered", r, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		h, _, s := steeringHarness(t, &backend.SteerError{ThreadID: "thread-1", Why: backend.SteerRefused})
		if wait, err := s.SteerTurn(Turn{Prompt: "x", Source: SourceClaude}); wait != nil || err != nil {
			t.Errorf("SteerTurn refused = %v, %v; want nothing steered, no error", wait != nil, err)
		}
		h.fb.Answer("done")
	})
	t.Run("unknown", func(t *testing.T) {
		h, _, s := steeringHarness(t, errors.New("the answer was lost"))
		if wait, err := s.SteerTurn(Turn{Prompt: "x", Source: SourceClaude}); wait != nil || err == nil {
			t.Errorf("SteerTurn with a lost answer = %v, %v; want an error", wait != nil, err)
		}
		h.fb.Answer("done")
	})
}
