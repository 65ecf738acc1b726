package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// memberTimeout bounds one change of the team's config.json.
const memberTimeout = 3 * time.Second

// backendType marks the members this proxy adds to a team's config.json.
const backendType = "atm-agent-mcp"

// teamHooks are the mail hooks the sessions see (session.Mail): around the
// bridge's (mailHooks) they keep each live Codex identity a member of the
// team's config.json while its session is live, so that the lead's
// SendMessage and the atm CLI can address it, and hand the lead's identity
// between the lead's push (leadPush) and a Codex session that binds it.
//
// Only members this proxy added are removed: an identity that config.json
// already listed (the user's own member) is left alone. A proxy's entries
// carry backendType atm-agent-mcp; at start, those whose identity nobody
// holds (left by a proxy that crashed) are removed (pruneStale). A team
// directory that vanished (Claude Code deletes its session team when the
// lead exits) is said once and otherwise ignored: sessions, mail and the
// tools go on.
type teamHooks struct {
	mail *mailHooks
	lead *leadPush // nil: no lead push
	atm  *atmclient.Client
	team string
	cwd  func(identity string) string // the session's cwd, for the member entry
	kind func(identity string) string // the session's agent kind, the member's agentType
	log  interface {
		Warn(string, ...any)
		Debug(string, ...any)
	}
	now func() time.Time

	mu    sync.Mutex      // guards the fields below; never held across I/O
	added map[string]bool // identities this proxy added to config.json
	gone  bool            // the team's config.json was missing: said once
}

var _ session.Mail = (*teamHooks)(nil)

// Bind makes identity a member, gives it the lead's identity if it is that,
// and tells the bridge.
func (h *teamHooks) Bind(identity string, autoMail bool) {
	h.join(identity)
	if h.lead != nil && identity == h.lead.identity {
		h.lead.suspend()
	}
	h.mail.Bind(identity, autoMail)
}

// Unbind tells the bridge, ends identity's membership if this proxy added
// it, and gives the lead's identity back to the lead's push.
func (h *teamHooks) Unbind(identity string) {
	h.mail.Unbind(identity)
	h.leave(identity)
	if h.lead != nil && identity == h.lead.identity {
		h.lead.resume()
	}
}

// Idle is the post-turn mail check.
func (h *teamHooks) Idle(identity string) { h.mail.Idle(identity) }

// Stats returns the bridge's counters for identity.
func (h *teamHooks) Stats(identity string) session.MailStats { return h.mail.Stats(identity) }

// join adds identity to config.json unless it is listed there already.
func (h *teamHooks) join(identity string) {
	ctx, cancel := context.WithTimeout(context.Background(), memberTimeout)
	defer cancel()
	t, err := h.atm.TeamConfig(h.team)
	if err != nil {
		h.problem("join", identity, err)
		return
	}
	if m, ok := t.Member(identity); ok {
		h.mu.Lock()
		if ours(m) {
			h.added[identity] = true // an earlier proxy's entry: removed at close
		}
		already := h.added[identity]
		h.mu.Unlock()
		if !already {
			h.log.Debug("already a member of the team; left as listed", "identity", identity)
		}
		return
	}
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	m := atmclient.Member{
		Name: identity, AgentID: identity + "@" + h.team, AgentType: "codex",
		Extra: map[string]json.RawMessage{
			"joinedAt":      json.RawMessage(strconv.FormatInt(h.now().UnixMilli(), 10)),
			"backendType":   raw(backendType),
			"subscriptions": json.RawMessage("[]"),
		},
	}
	if cwd := h.cwd(identity); cwd != "" {
		m.Extra["cwd"] = raw(cwd)
	}
	if h.kind != nil {
		if k := h.kind(identity); k != "" {
			m.AgentType = k // "claude", "opencode": what the teammate is
		}
	}
	if err := h.atm.JoinTeam(ctx, h.team, m); err != nil {
		h.problem("join", identity, err)
		return
	}
	h.mu.Lock()
	h.added[identity] = true
	h.gone = false
	h.mu.Unlock()
	h.log.Debug("joined the team", "identity", identity)
}

// leave removes identity from config.json if this proxy added it.
func (h *teamHooks) leave(identity string) {
	h.mu.Lock()
	added := h.added[identity]
	delete(h.added, identity)
	h.mu.Unlock()
	if !added {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), memberTimeout)
	defer cancel()
	if err := h.atm.LeaveTeam(ctx, h.team, identity); err != nil {
		h.problem("leave", identity, err)
		return
	}
	h.log.Debug("left the team", "identity", identity)
}

// pruneStale removes the members an earlier proxy added (backendType
// atm-agent-mcp, agentType codex) whose identity nobody holds now: what a
// proxy that crashed, or was killed, left in config.json. free reports
// whether identity is free (no live session of any proxy of this registry
// holds it); it must not keep a claim.
func (h *teamHooks) pruneStale(free func(identity string) bool) {
	t, err := h.atm.TeamConfig(h.team)
	if err != nil {
		return // said when a session joins, if it matters
	}
	for _, m := range t.Members {
		if !ours(m) || !free(m.Name) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), memberTimeout)
		err := h.atm.LeaveTeam(ctx, h.team, m.Name)
		cancel()
		if err != nil {
			h.problem("leave", m.Name, err)
			continue
		}
		h.log.Debug("removed a member an ended proxy had added", "identity", m.Name)
	}
}

// ours reports whether a proxy added m (join's backendType, with an agent
// type: codex, or another agent kind).
func ours(m atmclient.Member) bool {
	var bt string
	raw, ok := m.Extra["backendType"]
	return ok && json.Unmarshal(raw, &bt) == nil && bt == backendType && m.AgentType != ""
}

// identityFree reports whether no live session holds identity in this
// proxy's registry directory: a claim of it succeeds (and is released at
// once).
func (s *Server) identityFree(identity string) bool {
	c, err := s.reg.Dir().Claim(identity, "")
	if err != nil {
		return false
	}
	c.Release()
	return true
}

// problem logs a failed change of the membership: a missing team once (the
// lead's exit deletes a session team), anything else as a warning.
func (h *teamHooks) problem(op, identity string, err error) {
	if errors.Is(err, atmclient.ErrTeamNotFound) {
		h.mu.Lock()
		said := h.gone
		h.gone = true
		h.mu.Unlock()
		if !said {
			h.log.Warn("the team is gone (its directory or config.json was removed); sessions go on, team membership is not kept", "op", op, "identity", identity)
			return
		}
		h.log.Debug("the team is still gone", "op", op, "identity", identity)
		return
	}
	h.log.Warn("cannot change the team's members", "op", op, "identity", identity, "err", err)
}

// sessionCwd is the cwd of the live session of identity, or "".
func (s *Server) sessionCwd(identity string) string {
	if sess := s.sessions.ByIdentity(identity); sess != nil {
		return sess.Record().Cwd
	}
	return ""
}

// sessionKind is the agent kind of the live session of identity ("codex"
// for a record that names none), leadAgentType for the lead's own identity
// without a session, or "".
func (s *Server) sessionKind(identity string) string {
	if sess := s.sessions.ByIdentity(identity); sess != nil {
		if k := sess.Record().Backend; k != "" {
			return k
		}
		return "codex"
	}
	if identity == s.opts.Identity {
		return leadAgentType
	}
	return ""
}

// leadAgentType is the agentType of the member this proxy adds for the
// lead's own identity (joinLead).
const leadAgentType = "lead"

// joinLead makes the lead's own identity a member of a configured team
// while its mail is pushed into the Claude Code session, so that agents
// can address it: atmclient delivers only to members, and a second
// window's lead-2 (or team-lead-2, moved there because another window
// holds team-lead) is rarely listed. A session team lists team-lead
// already. It is removed at shutdown if this proxy added it.
func (s *Server) joinLead() {
	if s.lead.client == nil || s.opts.SessionTeam {
		return
	}
	s.team.join(s.opts.Identity)
}
