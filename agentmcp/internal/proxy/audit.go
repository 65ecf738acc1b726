package proxy

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// auditTurn records a turn forwarded to Codex (FR-9.2) with its source.
func (s *Server) auditTurn(rec registry.Session, in turnInput, outcome string) {
	s.appendAudit(registry.Entry{Event: "turn:" + in.source.String(), AgentID: rec.AgentID, Identity: rec.Identity, Summary: in.prompt, Outcome: outcome})
}

// auditATM records an ATM tool call (FR-9.1).
func (s *Server) auditATM(tool, identity, recipient, text string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error: " + err.Error()
	}
	s.appendAudit(registry.Entry{Event: tool, Identity: identity, Recipient: recipient, Summary: text, Outcome: outcome})
}

// auditApproval records how an approval was answered.
func (s *Server) auditApproval(rec registry.Session, what, outcome string) {
	s.appendAudit(registry.Entry{Event: "approval", AgentID: rec.AgentID, Identity: rec.Identity, Summary: what, Outcome: outcome})
}

// auditSession records a session lifecycle event.
func (s *Server) auditSession(event string, rec registry.Session, outcome string) {
	s.appendAudit(registry.Entry{Event: event, AgentID: rec.AgentID, Identity: rec.Identity, Outcome: outcome})
}

func (s *Server) appendAudit(e registry.Entry) {
	if err := s.audit.Append(e); err != nil {
		s.log.Warn("cannot append to the audit log", "event", e.Event, "err", err)
	}
}
