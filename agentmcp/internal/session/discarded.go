package session

import (
	"fmt"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
)

// discardedLimit is how many discarded agent_ids a Manager remembers; the
// oldest is forgotten first.
const discardedLimit = 100

// discardedSession is why a session was discarded (Manager.Discard).
type discardedSession struct {
	agentID  string
	identity string
	reason   string
	at       time.Time
}

// discardLog remembers the last discardedLimit discarded sessions, so that
// agent_wait, agent_status and codex-reply on one of their agent_ids say
// what became of it instead of a bare "not found": a background call
// hands out the agent_id before its first turn is refused. Absent.mu
// guards it.
type discardLog struct {
	ring []discardedSession // oldest first
}

// add remembers d, forgetting the oldest beyond discardedLimit.
func (l *discardLog) add(d discardedSession) {
	if len(l.ring) == discardedLimit {
		l.ring = append(l.ring[:0], l.ring[1:]...)
	}
	l.ring = append(l.ring, d)
}

// find returns the record of agentID, the latest if there are several.
func (l *discardLog) find(agentID string) (discardedSession, bool) {
	for i := len(l.ring) - 1; i >= 0; i-- {
		if l.ring[i].agentID == agentID {
			return l.ring[i], true
		}
	}
	return discardedSession{}, false
}

// discard remembers d for Discarded.
func (a *Absent) discard(d discardedSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.discarded.add(d)
}

// Discarded returns the SESSION_NOT_FOUND error for an agent_id whose
// session the Manager discarded (its first turn failed or its agent
// refused it, see Manager.Discard), saying so and why, in the message and
// in the data (discarded, reason, identity, discarded_at); nil for any
// other agent_id. Only the last 100 discarded sessions are remembered.
func (a *Absent) Discarded(agentID string) error {
	a.mu.Lock()
	d, ok := a.discarded.find(agentID)
	a.mu.Unlock()
	if !ok {
		return nil
	}
	data := map[string]any{"agent_id": agentID, "discarded": true, "reason": d.reason, "identity": d.identity,
		"discarded_at": d.at.Format(time.RFC3339)}
	return proxyerr.New(proxyerr.ErrSessionNotFound, data,
		"%s", fmt.Sprintf("session %s (identity %q) was discarded: its first turn failed (%s); no session was kept and the identity is free: start a new one with codex", agentID, d.identity, d.reason))
}
