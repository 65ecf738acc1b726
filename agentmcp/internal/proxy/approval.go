package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// pendingApproval is an approval waiting for an answer. Whoever answers
// first wins: the client's elicitation, agent_respond, the timeout, or the
// session closing.
type pendingApproval struct {
	id       string
	a        *codexchild.Approval
	question string
	created  time.Time
	decided  chan answer // buffered 1: the first offer wins
	once     sync.Once
}

// answer is a decision with how it was reached, for the audit.
type answer struct {
	d       codexchild.Decision
	outcome string
}

// offer proposes an answer; only the first one counts. It reports whether
// this one was taken.
func (p *pendingApproval) offer(a answer) bool {
	taken := false
	p.once.Do(func() {
		p.decided <- a
		taken = true
	})
	return taken
}

// view is the pending approval as agent_status shows it.
func (p *pendingApproval) view() map[string]any {
	v := map[string]any{
		"approval_id": p.id, "kind": string(p.a.Kind), "question": p.question,
		"options": []string{"approve", "approve_for_session", "deny"}, "since": p.created.UTC().Format(time.RFC3339),
		"command": p.a.Command, "cwd": p.a.Cwd, "reason": p.a.Reason,
	}
	if len(p.a.Changes) > 0 {
		v["changes"] = p.a.Changes
	}
	return v
}

// bridgeApproval answers a Codex approval (FR-18). With a client that
// declared elicitation it asks with elicitation/create; with approval
// fallback "queue" (or while the client is asked) the approval is listed in
// agent_status and agent_respond answers it. No answer within the
// elicitation timeout, a client that cannot be asked (fallback "deny"), a
// gone client or a closing session all become a denial — never a JSON-RPC
// error, which would hang Codex's turn.
func (s *Server) bridgeApproval(sess *session, call *toolCall, a *codexchild.Approval) {
	var rec registry.Session
	if sess != nil {
		rec = sess.snapshot()
	}
	log := s.log.With("agent_id", rec.AgentID, "identity", rec.Identity, "kind", string(a.Kind))
	what := describeApproval(a)
	respond := func(an answer) {
		if err := a.Respond(an.d); err != nil && !errors.Is(err, codexchild.ErrAlreadyAnswered) {
			log.Warn("cannot answer codex approval", "err", err)
		}
		s.auditApproval(rec, what, an.outcome)
	}
	elicit := s.client.elicitation.Load()
	if !elicit {
		switch s.opts.ApprovalFallback {
		case "approve":
			log.Info("approval granted by policy (client has no elicitation)", "what", what)
			respond(answer{codexchild.Decision{Kind: codexchild.Approve}, "approved: approval_fallback=approve"})
			return
		case "queue":
		default:
			reason := "denied automatically: the MCP client cannot answer approval requests (it did not declare the " +
				"elicitation capability). Run without needing approval (approval-policy \"never\" with a suitable sandbox), " +
				"or use a client with elicitation support, or set approval_fallback = \"queue\" (answer with agent_respond) " +
				"or \"approve\" for trusted setups."
			log.Info("approval denied: client has no elicitation", "what", what)
			respond(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, "denied: client has no elicitation"})
			return
		}
	}
	id := a.ID
	if id == "" {
		id = fmt.Sprintf("approval-%d", time.Now().UnixNano())
	}
	p := &pendingApproval{id: id, a: a, question: fmt.Sprintf("[%s] %s", firstNonEmpty(rec.Identity, "codex"), what),
		created: s.now(), decided: make(chan answer, 1)}
	if sess != nil {
		sess.mu.Lock()
		if sess.closing {
			sess.mu.Unlock()
			respond(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: "the session is closing"}, "denied: session closing"})
			return
		}
		if sess.approvals == nil {
			sess.approvals = map[string]*pendingApproval{}
		}
		sess.approvals[id] = p
		sess.mu.Unlock()
		defer func() {
			sess.mu.Lock()
			delete(sess.approvals, id)
			sess.mu.Unlock()
		}()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if elicit {
		go s.elicit(ctx, p, rec, call, log)
	} else {
		log.Info("approval queued for agent_respond", "approval_id", id, "what", what)
	}
	timer := time.NewTimer(s.opts.ElicitationTimeout)
	defer timer.Stop()
	select {
	case an := <-p.decided:
		respond(an)
	case <-timer.C:
		p.offer(answer{})
		log.Warn("approval timed out; denying", "after", s.opts.ElicitationTimeout, "what", what)
		respond(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: fmt.Sprintf("no answer from the user within %s", s.opts.ElicitationTimeout)},
			"denied: elicitation timeout"})
	case <-s.ctx.Done():
		p.offer(answer{})
		respond(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: "the proxy is shutting down"}, "denied: shutdown"})
	}
}

// elicit asks the client with elicitation/create and offers its answer.
func (s *Server) elicit(ctx context.Context, p *pendingApproval, rec registry.Session, call *toolCall, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) {
	a := p.a
	params := map[string]any{
		"message": p.question,
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve_for_session": map[string]any{"type": "boolean", "title": "Approve for the rest of this session", "default": false},
				"reason":              map[string]any{"type": "string", "title": "Reason (shown to the agent when you decline)"},
			},
		},
		"agent_id": rec.AgentID, "identity": rec.Identity, "threadId": a.ThreadID, "approval_id": p.id,
		"kind": string(a.Kind), "command": a.Command, "cwd": a.Cwd, "reason": a.Reason,
	}
	if len(a.Changes) > 0 {
		params["changes"] = a.Changes
	}
	if call != nil {
		params["requestId"] = call.id.Raw()
		call.prog.send("waiting for approval: " + clip(describeApproval(a), 80))
	}
	resp, err := s.client.request(ctx, "elicitation/create", params)
	switch {
	case err != nil && ctx.Err() != nil:
		return // answered otherwise, timed out or closing
	case err != nil:
		log.Info("approval could not be asked; denying", "err", err)
		p.offer(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: "the approval could not be asked: " + err.Error()}, "denied: client gone"})
		return
	case resp.Error != nil:
		log.Warn("client answered the approval with an error; denying", "error", string(resp.Error))
		p.offer(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: "the client could not show the approval request"}, "denied: client error"})
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
			p.offer(answer{codexchild.Decision{Kind: codexchild.ApproveForSession}, "approved for session"})
			return
		}
		p.offer(answer{codexchild.Decision{Kind: codexchild.Approve}, "approved"})
	case "cancel":
		p.offer(answer{codexchild.Decision{Kind: codexchild.Abort, Reason: "cancelled by the user"}, "aborted: user cancelled"})
	default: // "decline" and anything unknown
		reason := strings.TrimSpace(r.Content.Reason)
		if reason == "" {
			reason = "declined by the user"
		}
		p.offer(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, "denied: " + reason})
	}
}

// parseAnswer reads agent_respond's answer: approve, approve_for_session,
// deny, or "deny: <reason>".
func parseAnswer(ans, reason string) (codexchild.Decision, error) {
	ans = strings.TrimSpace(ans)
	if k, r, ok := strings.Cut(ans, ":"); ok {
		ans, reason = strings.TrimSpace(k), firstNonEmpty(strings.TrimSpace(reason), strings.TrimSpace(r))
	}
	switch strings.ToLower(ans) {
	case "approve", "approved", "accept", "yes":
		return codexchild.Decision{Kind: codexchild.Approve}, nil
	case "approve_for_session", "approved_for_session":
		return codexchild.Decision{Kind: codexchild.ApproveForSession}, nil
	case "deny", "denied", "decline", "no":
		return codexchild.Decision{Kind: codexchild.Deny, Reason: firstNonEmpty(reason, "denied by the orchestrator")}, nil
	case "abort", "cancel":
		return codexchild.Decision{Kind: codexchild.Abort, Reason: firstNonEmpty(reason, "aborted by the orchestrator")}, nil
	}
	return codexchild.Decision{}, fmt.Errorf("answer %q is not approve, approve_for_session, deny or \"deny: reason\"", ans)
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
		p.offer(answer{codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, "denied: " + reason})
	}
	// Wait (briefly) until the bridges have answered Codex.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		sess.mu.Lock()
		n := len(sess.approvals)
		sess.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
