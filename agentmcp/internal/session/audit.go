package session

import (
	"log/slog"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// AuditLog is where audit entries go (*registry.Audit).
type AuditLog interface {
	Append(e registry.Entry) error
}

// Auditor writes the audit trail (docs/requirements.md#fr-9): one method
// per kind of event. A failed append is logged, never returned: the audit
// never fails the operation it records. The zero Auditor (no log) records
// nothing.
type Auditor struct {
	log AuditLog
	lg  *slog.Logger
}

// NewAuditor returns an Auditor appending to log; failures go to lg (nil
// discards them).
func NewAuditor(log AuditLog, lg *slog.Logger) *Auditor {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &Auditor{log: log, lg: lg}
}

// Turn records a turn forwarded to its agent (FR-9.2) with its source.
func (a *Auditor) Turn(rec registry.Session, src Source, prompt, outcome string) {
	a.Append(registry.Entry{Event: "turn:" + src.String(), AgentID: rec.AgentID, Identity: rec.Identity, Summary: prompt, Outcome: outcome})
}

// ATM records an ATM tool call (FR-9.1).
func (a *Auditor) ATM(tool, identity, recipient, text string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error: " + err.Error()
	}
	a.Append(registry.Entry{Event: tool, Identity: identity, Recipient: recipient, Summary: text, Outcome: outcome})
}

// Approval records how an approval was answered.
func (a *Auditor) Approval(rec registry.Session, what, outcome string) {
	a.Append(registry.Entry{Event: "approval", AgentID: rec.AgentID, Identity: rec.Identity, Summary: what, Outcome: outcome})
}

// Session records a session lifecycle event.
func (a *Auditor) Session(event string, rec registry.Session, outcome string) {
	a.Append(registry.Entry{Event: event, AgentID: rec.AgentID, Identity: rec.Identity, Outcome: outcome})
}

// Append writes any entry.
func (a *Auditor) Append(e registry.Entry) {
	if a == nil || a.log == nil {
		return
	}
	if err := a.log.Append(e); err != nil {
		a.lg.Warn("cannot append to the audit log", "event", e.Event, "err", err)
	}
}
