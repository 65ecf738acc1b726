package session

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// fakeCall is a CallRef that records what the turn did with it.
type fakeCall struct {
	mu        sync.Mutex
	releases  int
	progress  []string
	replyNow  bool // TryReplyNow succeeds
	replied   *TurnResult
	atCommit  string // the session's status when commit ran
	detailFor *Session
}

func (c *fakeCall) RequestID() json.RawMessage { return json.RawMessage(`7`) }
func (c *fakeCall) Progress(msg string) {
	c.mu.Lock()
	c.progress = append(c.progress, msg)
	c.mu.Unlock()
}

// WantsProgress reports true: the tests see every progress message.
func (c *fakeCall) WantsProgress() bool { return true }
func (c *fakeCall) Release() {
	c.mu.Lock()
	c.releases++
	c.mu.Unlock()
}
func (c *fakeCall) TryReplyNow(r *TurnResult, commit func()) bool {
	if !c.replyNow {
		return false
	}
	commit()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replied = r
	if c.detailFor != nil {
		c.atCommit = c.detailFor.Detail(0).Status
	}
	return true
}

// countingRegistry counts Update calls and can hold Add until released.
type countingRegistry struct {
	Registry
	mu      sync.Mutex
	updates int
	hold    chan struct{} // Add waits for it to close when set
	adding  chan struct{} // closed when an Add starts waiting
}

func (r *countingRegistry) Update(agentID string, fn func(*registry.Session)) (registry.Session, error) {
	r.mu.Lock()
	r.updates++
	r.mu.Unlock()
	return r.Registry.Update(agentID, fn)
}

func (r *countingRegistry) Add(s registry.Session) (registry.Session, error) {
	r.mu.Lock()
	hold, adding := r.hold, r.adding
	r.mu.Unlock()
	if hold != nil {
		close(adding)
		<-hold
	}
	return r.Registry.Add(s)
}

func (r *countingRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates
}

type harness struct {
	t   *testing.T
	m   *Manager
	fb  *fakebackend.Backend
	reg *countingRegistry
	dir string
}

// newHarness returns a Manager over a fake backend and a real registry in a
// temporary ATM home; modify (optional) changes its Config.
func newHarness(t *testing.T, modify func(*Config)) *harness {
	t.Helper()
	checkNoLeaks(t)
	home := t.TempDir()
	reg, err := registry.Open(registry.Config{Home: home, Team: "dev", Identity: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fb: fakebackend.New(fakebackend.Config{}), reg: &countingRegistry{Registry: RegistryOf(reg)}, dir: home}
	cfg := Config{Home: home, Team: "dev", Backends: map[string]Backend{registry.DefaultKind: h.fb}, Registry: h.reg, Cwd: home, AutoMail: true, PersistThreads: true,
		ElicitationTimeout: 5 * time.Second, SummaryTimeout: 2 * time.Second}
	if modify != nil {
		modify(&cfg)
	}
	h.m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.m.Shutdown()
		h.m.Stop()
		if !h.m.Wait(5 * time.Second) {
			t.Error("jobs still running after Stop")
		}
		reg.Close()
	})
	return h
}

// create starts a session for identity.
func (h *harness) create(identity string) *Session {
	h.t.Helper()
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: identity, Cwd: h.dir})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t *testing.T) { leakcheck.Check(t, "session.") }

// codexOptions are the Codex options of a thread's parameters (zero when
// it has none).
func codexOptions(p backend.ThreadParams) codexchild.Options {
	o, _ := p.Options.(codexchild.Options)
	return o
}
