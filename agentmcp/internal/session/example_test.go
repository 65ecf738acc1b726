package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// echoAgent is a backend that answers every turn with the last line of its prompt (after the
// session context the manager puts first).
type echoAgent struct{}

func (echoAgent) Turn(_ context.Context, req backend.TurnRequest) (*backend.Result, error) {
	lines := strings.Split(strings.TrimSpace(req.Prompt), "\n")
	thread := req.ThreadID
	if thread == "" {
		thread = "thread-1"
	}
	return &backend.Result{ThreadID: thread, Text: "done: " + lines[len(lines)-1], Status: "completed"}, nil
}
func (echoAgent) Interrupt(context.Context, string) error { return nil }
func (echoAgent) Status() backend.Status                  { return backend.Status{} }

// A manager over a registry in a temporary ATM home: a session for the
// identity "arch" runs two turns on one thread of the default kind's
// backend, then closes.
func Example() {
	home, _ := os.MkdirTemp("", "session-example-")
	defer os.RemoveAll(home)
	_ = os.MkdirAll(filepath.Join(home, ".claude", "teams", "dev", "inboxes"), 0o755)
	_ = os.WriteFile(filepath.Join(home, ".claude", "teams", "dev", "config.json"),
		[]byte(`{"name":"dev","members":[{"agentId":"arch@dev","name":"arch"}]}`), 0o644)
	reg, err := registry.Open(registry.Config{Home: home, Team: "dev", Identity: "proxy"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()
	m, err := session.NewManager(session.Config{Home: home, Team: "dev", Backends: map[string]session.Backend{registry.DefaultKind: echoAgent{}}, Registry: session.RegistryOf(reg), Cwd: home})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	s, err := m.Create(ctx, session.CreateRequest{Identity: "arch", Cwd: home})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, prompt := range []string{"plan the change", "write the tests"} {
		r, err := s.Run(ctx, session.Turn{Prompt: prompt, Source: session.SourceClaude})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Identity, r.ThreadID, r.Status, r.Text)
	}
	m.Shutdown()
	m.Stop()
	m.Wait(5 * time.Second)
	fmt.Println(s.Record().Status)
	// Output:
	// arch thread-1 completed done: plan the change
	// arch thread-1 completed done: write the tests
	// closed
}
