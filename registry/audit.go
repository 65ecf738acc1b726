package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// SummaryLimit is the number of characters of a message or prompt an audit
// entry keeps (FR-9.2).
const SummaryLimit = 200

// Audit event types.
const (
	EventATMSend       = "atm_send"
	EventATMRead       = "atm_read"
	EventATMBroadcast  = "atm_broadcast"
	EventATMPending    = "atm_pending_count"
	EventCodex         = "codex"
	EventCodexReply    = "codex-reply"
	EventMailInjected  = "mail_injected"
	EventSessionClose  = "session_close"
	EventSessionResume = "session_resume"
)

// Entry is one audit record, one line of {team}/audit.jsonl.
type Entry struct {
	// Time is when it happened. Zero means now.
	Time      time.Time `json:"timestamp"`
	Event     string    `json:"event"`
	AgentID   string    `json:"agent_id"` // always present, for per-session views (FR-9.3)
	Identity  string    `json:"identity"`
	Recipient string    `json:"recipient,omitempty"`
	// Summary is the message or prompt. Callers may pass it whole: Append
	// redacts it and keeps the first SummaryLimit characters.
	Summary string `json:"summary,omitempty"`
	// Outcome is "ok" or a short error description.
	Outcome string `json:"outcome,omitempty"`
}

// AuditConfig configures [Dir.OpenAudit].
type AuditConfig struct {
	// Now returns the current time. Optional: nil means time.Now.
	Now func() time.Time
	// Deferred makes OpenAudit create nothing: the log (and the team
	// directory) is created at the first Append, whose error then says
	// what went wrong. For a team that may be a typo, like
	// [Config.Deferred]. Optional: false creates the log at once.
	Deferred bool
}

// Audit appends entries to a team's audit log. It is safe for concurrent
// use, and several processes may append to one log: each entry is a single
// write to a file opened with O_APPEND, so lines never interleave.
type Audit struct {
	now func() time.Time
	dir Dir

	mu     sync.Mutex
	f      *os.File // nil until opened (Deferred) and once closed
	closed bool
}

// ErrAuditClosed is returned by Append after Close.
var ErrAuditClosed = errors.New("audit log closed")

// OpenAudit opens (creating, 0600) the team's audit log {team}/audit.jsonl
// for appending; with AuditConfig.Deferred, at the first Append.
func (d Dir) OpenAudit(cfg AuditConfig) (*Audit, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	a := &Audit{now: now, dir: d}
	if cfg.Deferred {
		return a, nil
	}
	if err := a.openLocked(); err != nil {
		return nil, err
	}
	return a, nil
}

// openLocked creates the team directory and opens the log. a.mu must be
// held (or a not yet shared).
func (a *Audit) openLocked() error {
	if err := os.MkdirAll(a.dir.root, dirPerm); err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	f, err := os.OpenFile(a.dir.auditPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	a.f = f
	return nil
}

// Append redacts every text field of e (see [Redact]), cuts the summary to
// SummaryLimit characters and appends e as one JSON line in a single write.
func (a *Audit) Append(e Entry) error {
	if e.Time.IsZero() {
		e.Time = a.now()
	}
	e.Time = e.Time.UTC()
	e.Event = Redact(e.Event)
	e.AgentID = Redact(e.AgentID)
	e.Identity = Redact(e.Identity)
	e.Recipient = Redact(e.Recipient)
	e.Summary = truncateRunes(Redact(e.Summary), SummaryLimit)
	e.Outcome = Redact(e.Outcome)
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrAuditClosed
	}
	if a.f == nil {
		if err := a.openLocked(); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	// One write call per entry: with O_APPEND the kernel places it at the
	// end atomically with respect to other appenders.
	if _, err := a.f.Write(line); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Close closes the log. Closing twice is a no-op.
func (a *Audit) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
