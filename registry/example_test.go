package registry_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

func Example() {
	home, err := os.MkdirTemp("", "atm-home")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)

	// A proxy instance opens its registry, claiming its identity.
	reg, err := registry.Open(registry.Config{Home: home, Team: "my-team", Identity: "codex-architect"})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	// A new Codex session binds an identity; every change is persisted.
	s, err := reg.Add(registry.Session{
		AgentID:     "codex-01jmexample0000000000000",
		Identity:    "codex-architect",
		RepoName:    "myapp",
		Status:      registry.StatusBusy,
		ThreadState: registry.ThreadBusy,
	})
	if err != nil {
		log.Fatal(err)
	}
	// The identity is taken until the session closes.
	_, err = reg.Add(registry.Session{Identity: "codex-architect"})
	fmt.Println("second bind is a conflict:", errors.Is(err, registry.ErrIdentityConflict))

	// Codex answers with its thread id; the turn is over.
	s, _ = reg.Update(s.AgentID, func(s *registry.Session) {
		s.BackendID = "019a-thread-1"
		s.Status, s.ThreadState = registry.StatusIdle, registry.ThreadIdle
	})
	fmt.Println(s.AgentID, s.Status, s.BackendID)

	// On shutdown: save a summary and close the session.
	if err := reg.Dir().WriteSummary(s.Identity, s.BackendID, "Refactored auth; tests pending."); err != nil {
		log.Fatal(err)
	}
	s, _ = reg.CloseSession(s.AgentID)
	fmt.Println(s.Status, reg.Dir().HasSummary(s.Identity, s.BackendID))

	// `atm-agent-mcp serve --resume` finds it again.
	last, _ := reg.MostRecent("codex-architect")
	sum, _ := reg.Dir().ReadSummary(last.Identity, last.BackendID)
	fmt.Println(last.AgentID, sum)
	// Output:
	// second bind is a conflict: true
	// codex-01jmexample0000000000000 idle 019a-thread-1
	// closed true
	// codex-01jmexample0000000000000 Refactored auth; tests pending.
}
