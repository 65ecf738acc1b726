package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// pendingApproval is an approval waiting for the client.
type pendingApproval struct {
	a      *codexchild.Approval
	cancel context.CancelFunc
}

// bridgeApproval asks the client about a Codex approval with
// elicitation/create (FR-18) and answers Codex. It always answers: a
// timeout, a client without elicitation, a gone client or a closing session
// all become a denial (or approval, when so configured), never a JSON-RPC
// error, which would hang Codex's turn.
func (s *Server) bridgeApproval(sess *session, call *toolCall, a *codexchild.Approval) {
	var rec registry.Session
	if sess != nil {
		rec = sess.snapshot()
	}
	log := s.log.With("agent_id", rec.AgentID, "identity", rec.Identity, "kind", string(a.Kind))
	what := describeApproval(a)
	answer := func(d codexchild.Decision, outcome string) {
		if err := a.Respond(d); err != nil && !errors.Is(err, codexchild.ErrAlreadyAnswered) {
			log.Warn("cannot answer codex approval", "err", err)
		}
		s.auditApproval(rec, what, outcome)
	}
	if !s.client.elicitation.Load() {
		if s.opts.ApprovalFallback == "approve" {
			log.Info("approval granted by policy (client has no elicitation)", "what", what)
			answer(codexchild.Decision{Kind: codexchild.Approve}, "approved: approval_fallback=approve")
			return
		}
		reason := "denied automatically: the MCP client cannot answer approval requests (it did not declare the " +
			"elicitation capability). Run without needing approval (approval-policy \"never\" with a suitable sandbox), " +
			"or use a client with elicitation support, or set approval_fallback = \"approve\" for trusted setups."
		log.Info("approval denied: client has no elicitation", "what", what)
		answer(codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, "denied: client has no elicitation")
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.ElicitationTimeout)
	defer cancel()
	if sess != nil {
		sess.mu.Lock()
		if sess.closing {
			sess.mu.Unlock()
			answer(codexchild.Decision{Kind: codexchild.Deny, Reason: "the session is closing"}, "denied: session closing")
			return
		}
		if sess.approvals == nil {
			sess.approvals = map[*codexchild.Approval]*pendingApproval{}
		}
		sess.approvals[a] = &pendingApproval{a: a, cancel: cancel}
		sess.mu.Unlock()
		defer func() {
			sess.mu.Lock()
			delete(sess.approvals, a)
			sess.mu.Unlock()
		}()
	}
	params := map[string]any{
		"message": fmt.Sprintf("[%s] %s", firstNonEmpty(rec.Identity, "codex"), what),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve_for_session": map[string]any{"type": "boolean", "title": "Approve for the rest of this session", "default": false},
				"reason":              map[string]any{"type": "string", "title": "Reason (shown to the agent when you decline)"},
			},
		},
		"agent_id": rec.AgentID, "identity": rec.Identity, "threadId": a.ThreadID,
		"kind": string(a.Kind), "command": a.Command, "cwd": a.Cwd, "reason": a.Reason,
	}
	if len(a.Changes) > 0 {
		params["changes"] = a.Changes
	}
	if call != nil {
		params["requestId"] = call.id.Raw()
	}
	if call != nil && call.prog != nil {
		call.prog.send("waiting for approval: " + clip(what, 80))
	}
	resp, err := s.client.request(ctx, "elicitation/create", params)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		log.Warn("approval timed out; denying", "after", s.opts.ElicitationTimeout, "what", what)
		answer(codexchild.Decision{Kind: codexchild.Deny, Reason: fmt.Sprintf("no answer from the user within %s", s.opts.ElicitationTimeout)}, "denied: elicitation timeout")
		return
	case err != nil:
		reason := "the approval could not be asked: " + err.Error()
		if ctx.Err() != nil {
			reason = "the session was closed before the approval was answered"
		}
		log.Info("approval denied", "reason", reason)
		answer(codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, "denied: "+reason)
		return
	}
	if resp.Error != nil {
		log.Warn("client answered the approval with an error; denying", "error", string(resp.Error))
		answer(codexchild.Decision{Kind: codexchild.Deny, Reason: "the client could not show the approval request"}, "denied: client error")
		return
	}
	var r struct {
		Action  string `json:"action"`
		Content struct {
			ApproveForSession bool   `json:"approve_for_session"`
			Reason            string `json:"reason"`
			Decision          string `json:"decision"`
		} `json:"content"`
	}
	_ = json.Unmarshal(resp.Result, &r)
	switch r.Action {
	case "accept":
		if r.Content.ApproveForSession || r.Content.Decision == "approved_for_session" {
			answer(codexchild.Decision{Kind: codexchild.ApproveForSession}, "approved for session")
			return
		}
		answer(codexchild.Decision{Kind: codexchild.Approve}, "approved")
	case "cancel":
		answer(codexchild.Decision{Kind: codexchild.Abort, Reason: "cancelled by the user"}, "aborted: user cancelled")
	default: // "decline" and anything unknown
		reason := strings.TrimSpace(r.Content.Reason)
		if reason == "" {
			reason = "declined by the user"
		}
		answer(codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, "denied: "+reason)
	}
}

// describeApproval is the human question for an approval.
func describeApproval(a *codexchild.Approval) string {
	switch a.Kind {
	case codexchild.ApprovalPatch:
		n := countChanges(a.Changes)
		q := fmt.Sprintf("Allow Codex to apply changes to %d file%s", n, plural(n))
		if a.Reason != "" {
			q += " (" + a.Reason + ")"
		}
		return q + "?"
	default:
		q := "Allow Codex to run `" + a.Command + "`"
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

// denyPendingApprovals answers every approval the session still waits for
// with a denial (FR-18.5) before it closes.
func (s *Server) denyPendingApprovals(sess *session, reason string) {
	sess.mu.Lock()
	pend := make([]*pendingApproval, 0, len(sess.approvals))
	for _, p := range sess.approvals {
		pend = append(pend, p)
	}
	sess.mu.Unlock()
	for _, p := range pend {
		if err := p.a.Respond(codexchild.Decision{Kind: codexchild.Deny, Reason: reason}); err == nil {
			s.auditApproval(sess.snapshot(), describeApproval(p.a), "denied: "+reason)
		}
		p.cancel()
	}
}
