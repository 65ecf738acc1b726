package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// pending is an approval waiting for an answer. Whoever answers first wins:
// the client's elicitation, Session.Respond, the timeout, the session
// closing or the proxy shutting down.
type pending struct {
	id       string
	a        *backend.Approval
	question string
	created  time.Time
	decided  chan Answer   // buffered 1: the first offer wins
	answered chan struct{} // closed once the agent has been answered
	once     sync.Once
}

// offer proposes an answer; only the first one counts. It reports whether
// this one was taken.
func (p *pending) offer(a Answer) bool {
	taken := false
	p.once.Do(func() {
		p.decided <- a
		taken = true
	})
	return taken
}

// bridgeApproval answers an agent's approval (FR-18), on a goroutine of its own: with a
// client that can be asked, through the turn's Asker (asker, else the
// Manager's); with approval fallback "queue" (or while the client is
// asked) it is listed in Detail and Session.Respond answers it. No answer
// within the elicitation timeout, a client that cannot be asked (fallback
// "deny"), a gone client or a closing session all become a denial — never
// a JSON-RPC error, which would hang the agent's turn. h.s is nil for a
// turn without a session.
func (h *turnHandler) bridgeApproval(a *backend.Approval) {
	m, s, call, asker := h.m, h.s, h.call, h.asker
	var rec registry.Session
	if s != nil {
		rec = s.Record()
	}
	log := m.log.With("agent_id", rec.AgentID, "identity", rec.Identity, "kind", string(a.Kind))
	what := describeApproval(a, m.cat.Name(rec.Kind()))
	respond := func(an Answer) {
		if err := a.Respond(an.Decision); err != nil && !errors.Is(err, backend.ErrAlreadyAnswered) {
			log.Warn("cannot answer codex approval", "err", err)
		}
		m.cfg.Audit.Approval(rec, what, an.Outcome)
	}
	b, _ := m.cat.of(rec)
	if s != nil && deniedReadOnly(b, a) && m.cat.HeldReadOnly(rec.Role) {
		// Its agent has no sandbox to hold it read-only: what would
		// change the machine is refused here, without asking (policy.go).
		log.Info("approval denied: the session is held read-only", "what", what)
		respond(Answer{backend.Decision{Kind: backend.Deny, Reason: readOnlyAgentDenial}, "denied: read-only policy"})
		return
	}
	if asker == nil {
		asker = m.cfg.Asker
	}
	if asker == nil || !asker.CanAsk() {
		switch m.cfg.ApprovalFallback {
		case "approve":
			if m.cat.heldReadOnlyTurn(s, rec) {
				// Approving would let a read-only session write or leave its
				// sandbox without anyone deciding (policy.go).
				log.Info("approval denied: the session is held read-only; approval_fallback=approve does not apply", "what", what)
				respond(Answer{backend.Decision{Kind: backend.Deny, Reason: readOnlyDenial}, "denied: read-only policy"})
				return
			}
			log.Info("approval granted by policy (client has no elicitation)", "what", what)
			respond(Answer{backend.Decision{Kind: backend.Approve}, "approved: approval_fallback=approve"})
			return
		case "queue":
			asker = QueueAsker{}
		default:
			reason := "denied automatically: the MCP client cannot answer approval requests (it did not declare the " +
				"elicitation capability), so no one was asked. Run without needing approval (approval-policy \"never\" with a suitable sandbox), " +
				"or use a client with elicitation support, or set approval_fallback = \"queue\" (answer with agent_respond) " +
				"or \"approve\" for trusted setups."
			log.Info("approval denied: client has no elicitation", "what", what)
			respond(Answer{backend.Decision{Kind: backend.Deny, Reason: reason}, "denied: client has no elicitation"})
			return
		}
	}
	id := a.ID
	if id == "" {
		id = fmt.Sprintf("approval-%d", time.Now().UnixNano())
	}
	p := &pending{id: id, a: a, question: fmt.Sprintf("[%s] %s", firstNonEmpty(rec.Identity, rec.Kind()), what),
		created: m.now(), decided: make(chan Answer, 1), answered: make(chan struct{})}
	defer close(p.answered)
	if s != nil {
		if !s.pend(p) {
			respond(Answer{backend.Decision{Kind: backend.Deny, Reason: "the session is closing", TurnEnds: true}, "denied: session closing"})
			return
		}
		defer s.pend(&pending{id: id}) // done: unlisted
	}
	ctx, cancel := context.WithCancelCause(m.ctx)
	defer cancel(nil)
	if _, queued := asker.(QueueAsker); !queued {
		q := Question{ApprovalID: id, AgentID: rec.AgentID, Identity: rec.Identity, Message: p.question, Approval: a, Offer: p.offer}
		if call != nil {
			q.RequestID = call.RequestID()
			call.Progress("waiting for approval: " + Clip(what, 80))
		}
		go func() {
			an, err := asker.Ask(ctx, q)
			switch {
			case err != nil && ctx.Err() != nil:
				// answered otherwise, timed out or shutting down
			case err != nil:
				log.Info("approval could not be asked; denying", "err", err)
				p.offer(Answer{backend.Decision{Kind: backend.Deny, Reason: "the approval could not be asked: " + err.Error()}, "denied: client gone"})
			default:
				p.offer(an)
			}
		}()
	} else {
		log.Info("approval queued for agent_respond", "approval_id", id, "what", what)
	}
	timer := time.NewTimer(m.cfg.ElicitationTimeout)
	defer timer.Stop()
	select {
	case an := <-p.decided:
		cancel(&AnsweredError{Outcome: an.Outcome}) // the asker learns how, before the audit
		respond(an)
	case <-timer.C:
		p.offer(Answer{})
		log.Warn("approval timed out; denying", "after", m.cfg.ElicitationTimeout, "what", what)
		respond(Answer{backend.Decision{Kind: backend.Deny, Reason: fmt.Sprintf("no answer from the user within %s: no one answered the approval request in time", m.cfg.ElicitationTimeout)},
			"denied: elicitation timeout"})
	case <-m.ctx.Done():
		p.offer(Answer{})
		respond(Answer{backend.Decision{Kind: backend.Deny, Reason: "the proxy is shutting down", TurnEnds: true}, "denied: shutdown"})
	}
}

// AnsweredError is the cause of an Asker's context (context.Cause) when
// the approval it asks about was answered: by whom and how ("approve by
// the view", "deny by agent_respond"), so that an asker answered another
// way can say so.
type AnsweredError struct{ Outcome string }

func (e *AnsweredError) Error() string { return "the approval was answered: " + e.Outcome }

// QueueAsker asks nobody: the approval waits in the session's list
// (agent_status) for agent_respond, or the elicitation timeout.
type QueueAsker struct{}

// CanAsk reports true: queueing is always possible.
func (QueueAsker) CanAsk() bool { return true }

// Ask waits until the approval is answered otherwise (ctx ends then).
func (QueueAsker) Ask(ctx context.Context, _ Question) (Answer, error) {
	<-ctx.Done()
	return Answer{}, ctx.Err()
}

// NoAsker cannot ask: Config.ApprovalFallback decides (a modern client
// that did not declare elicitation).
type NoAsker struct{}

// CanAsk reports false.
func (NoAsker) CanAsk() bool { return false }

// Ask is never called.
func (NoAsker) Ask(context.Context, Question) (Answer, error) {
	return Answer{}, errors.New("session: NoAsker cannot ask")
}

// pend lists p as pending (false when the session is closing), or, for a
// p without an approval, unlists the approval of its id.
func (s *Session) pend(p *pending) bool {
	defer s.changed()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.a == nil {
		delete(s.approvals, p.id)
		return true
	}
	if s.closing != nil {
		return false
	}
	if s.approvals == nil {
		s.approvals = map[string]*pending{}
	}
	s.approvals[p.id] = p
	return true
}

// denyApprovals answers every approval the session still waits for with a
// denial (FR-18.5), which comes with the end of the turn (the session
// closes, the turn is interrupted), and waits (at most 2 s) until the agent
// has been told.
func (s *Session) denyApprovals(reason string) {
	s.mu.Lock()
	pend := make([]*pending, 0, len(s.approvals))
	for _, p := range s.approvals {
		pend = append(pend, p)
	}
	s.mu.Unlock()
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for _, p := range pend {
		p.offer(Answer{backend.Decision{Kind: backend.Deny, Reason: reason, TurnEnds: true}, "denied: " + reason})
	}
	for _, p := range pend {
		select {
		case <-p.answered:
		case <-deadline.C:
			return
		}
	}
}

// Respond answers a pending approval of the session (agent_respond); id ""
// names the only pending one. It returns the approval's id, or
// INVALID_PARAMS when there is no such approval or it was answered already.
func (s *Session) Respond(id string, d backend.Decision) (string, error) {
	return s.RespondFrom(id, d, "agent_respond")
}

// RespondFrom is Respond for an answer that came another way (from, "the
// view" say), which the audit names: "approve by the view". The first
// answer wins, whichever way it came; the others are withdrawn.
func (s *Session) RespondFrom(id string, d backend.Decision, from string) (string, error) {
	s.mu.Lock()
	p := s.approvals[id]
	if p == nil && id == "" && len(s.approvals) == 1 {
		for _, only := range s.approvals {
			p = only
		}
	}
	s.mu.Unlock()
	if p == nil {
		return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "approval_id", "approval_id": id},
			"no pending approval %q for this session (see agent_status)", id)
	}
	outcome := string(d.Kind) + " by " + from
	if d.Reason != "" {
		outcome += ": " + d.Reason
	}
	if !p.offer(Answer{d, outcome}) {
		return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"approval_id": p.id}, "approval %s was already answered", p.id)
	}
	return p.id, nil
}

// ParseAnswer reads agent_respond's answer: approve, approve_for_session,
// deny, or "deny: <reason>"; cancel is a denial, as an elicitation's
// cancel is; abort ends the turn.
func ParseAnswer(ans, reason string) (backend.Decision, error) {
	ans = strings.TrimSpace(ans)
	if k, r, ok := strings.Cut(ans, ":"); ok {
		ans, reason = strings.TrimSpace(k), firstNonEmpty(strings.TrimSpace(reason), strings.TrimSpace(r))
	}
	switch strings.ToLower(ans) {
	case "approve", "approved", "accept", "yes":
		return backend.Decision{Kind: backend.Approve}, nil
	case "approve_for_session", "approved_for_session":
		return backend.Decision{Kind: backend.ApproveForSession}, nil
	case "deny", "denied", "decline", "no":
		return backend.Decision{Kind: backend.Deny, Reason: firstNonEmpty(reason, "denied by the orchestrator")}, nil
	case "cancel":
		return backend.Decision{Kind: backend.Deny, Reason: firstNonEmpty(reason, "the approval request was dismissed by the orchestrator; the action was not run")}, nil
	case "abort":
		return backend.Decision{Kind: backend.Abort, Reason: firstNonEmpty(reason, "aborted by the orchestrator")}, nil
	}
	return backend.Decision{}, fmt.Errorf("answer %q is not approve, approve_for_session, deny or \"deny: reason\"", ans)
}

// describeApproval is the human question for an approval of agent (as
// Catalogue.Name names it: "Codex", "claude").
func describeApproval(a *backend.Approval, agent string) string {
	switch a.Kind {
	case backend.ApprovalPatch:
		n := countChanges(a.Changes)
		q := fmt.Sprintf("Allow %s to apply changes to %d file%s", agent, n, plural(n))
		if n == 0 && a.Changes == nil && a.Message != "" {
			q = "Allow " + agent + " to change files: " + a.Message // an ACP edit names no changes, its files in its title
		}
		if a.Reason != "" {
			q += " (" + a.Reason + ")"
		}
		return q + "?"
	case backend.ApprovalTool:
		return "Allow " + agent + " to use " + firstNonEmpty(a.Message, "a tool") + "?"
	default:
		q := "Allow " + agent + " to run `" + a.Command + "`"
		if a.Cwd != "" {
			q += " in `" + a.Cwd + "`"
		}
		if a.Reason != "" {
			q += " (" + a.Reason + ")"
		}
		return q + "?"
	}
}

func countChanges(raw json.RawMessage) int {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		return len(m)
	}
	var l []any
	if json.Unmarshal(raw, &l) == nil {
		return len(l)
	}
	return 0
}
