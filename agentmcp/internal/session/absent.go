package session

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Absent answers for the agent_ids a Manager does not hold: one it
// discarded (discarded.go), one another instance of the team holds, and
// the list of those (listing.go). It reads the team's registries, never
// writes them; its methods are safe for concurrent use.
type Absent struct {
	cfg  *Config
	log  *slog.Logger
	held func(agentID string) bool // the Manager holds the session of agentID

	mu        sync.Mutex // guards discarded; a leaf
	discarded discardLog // the last sessions Manager.Discard dropped
}

// Absent returns the Manager's answers for agent_ids it does not hold.
func (m *Manager) Absent() *Absent { return m.absent }

// teamRegistry is what Absent asks of Config.Registry, if it has
// it (*registry.Registry and RegistryOf's adapter do): the team's state
// directory, to read the other instances' registries, and this instance's
// identity.
type teamRegistry interface {
	Dir() registry.Dir
	Identity() string
}

// NotFound is the SESSION_NOT_FOUND error for an agent_id this
// proxy's registry does not hold. When another instance of the team holds
// it, the error says which, whether that instance's serve runs (its pid,
// from its claim's holder file, and whether that process is alive) and how
// to resume the session: there, or with serve --identity of that instance
// (registry.Dir.Owner: a pid that is gone, a zombie or reused is no
// running serve).
// For a session the Manager discarded it is Discarded's error.
func (a *Absent) NotFound(agentID string) error {
	if err := a.Discarded(agentID); err != nil {
		return err
	}
	msg := fmt.Sprintf("no session with agent_id %q in this proxy's registry", agentID)
	data := map[string]any{"agent_id": agentID}
	tr, ok := a.cfg.Registry.(teamRegistry)
	if !ok || registry.ValidateAgentID(agentID) != nil {
		return proxyerr.New(proxyerr.ErrSessionNotFound, data, "%s", msg)
	}
	inst, rec, found := findElsewhere(tr.Dir(), tr.Identity(), agentID)
	if !found {
		return proxyerr.New(proxyerr.ErrSessionNotFound, data, "%s", msg)
	}
	owner, h, running := inst.Identity, inst.Owner, inst.Running
	held := h.PID != 0
	data["owner_instance"], data["session_status"] = owner, string(rec.Status)
	data["owner_running"] = running
	if held {
		data["owner_pid"] = h.PID
	}
	team := tr.Dir().Team()
	switch {
	case running:
		msg += fmt.Sprintf("; it belongs to instance %q of team %q (identity %s, %s), whose serve runs as pid %d: continue it through that serve, or stop that one and start serve --team %s --identity %s --resume=%s",
			owner, team, rec.Identity, rec.Status, h.PID, team, owner, agentID)
	case held:
		msg += fmt.Sprintf("; it belongs to instance %q of team %q (identity %s, %s), whose serve is no longer running (pid %d is gone): start serve --team %s --identity %s --resume=%s to resume it",
			owner, team, rec.Identity, rec.Status, h.PID, team, owner, agentID)
	default:
		msg += fmt.Sprintf("; it belongs to instance %q of team %q (identity %s, %s), whose serve is not running: start serve --team %s --identity %s --resume=%s to resume it",
			owner, team, rec.Identity, rec.Status, team, owner, agentID)
	}
	return proxyerr.New(proxyerr.ErrSessionNotFound, data, "%s", msg)
}

// findElsewhere looks for agentID in the registries of the team's
// instances other than self (Dir.Scan: no lock, nothing written; the
// sessions of an instance whose serve is gone read stale).
func findElsewhere(d registry.Dir, self, agentID string) (inst registry.Instance, rec registry.Session, ok bool) {
	insts, err := d.Scan()
	if err != nil {
		return registry.Instance{}, registry.Session{}, false
	}
	for _, in := range insts {
		if in.Identity == self {
			continue
		}
		for _, s := range in.Sessions {
			if s.AgentID == agentID {
				return in, s, true
			}
		}
	}
	return registry.Instance{}, registry.Session{}, false
}
