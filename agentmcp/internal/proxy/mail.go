package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/mailbridge"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// startMail starts the mail bridge (FR-8); bindLive then binds the
// sessions that are already live.
func (s *Server) startMail(ctx context.Context) error {
	b, err := mailbridge.New(mailbridge.Config{
		ATM: s.atm, Team: s.opts.Team, Target: mailTarget{s},
		PollInterval: s.opts.MailPollInterval, IdleTimeout: s.opts.MailIdleTimeout, MaxMessages: s.opts.MaxMailMessages,
		MaxMessageLength: s.opts.MaxMailMessageLength, OnBatch: s.onBatch, OnFrame: s.frames.onFrame, Logger: s.log, Now: s.opts.Now,
	})
	if err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	s.mail.set(b, s.log)
	return nil
}

// bindLive binds the sessions that are already live (resumed at start, or
// started before the bridge ran) to the bridge.
func (s *Server) bindLive() {
	for identity, sess := range s.sessions.Live() {
		s.mail.Bind(identity, sess.Detail(0).AutoMail)
	}
}

// mailHooks is the mail layer as sessions see it (session.Mail): the bridge
// once it runs, nothing before.
type mailHooks struct {
	b   atomic.Pointer[mailbridge.Bridge] // nil until the bridge runs
	log interface{ Warn(string, ...any) } // written before b is published
}

func (h *mailHooks) set(b *mailbridge.Bridge, log interface{ Warn(string, ...any) }) {
	h.log = log
	h.b.Store(b)
}

func (h *mailHooks) bridge() *mailbridge.Bridge { return h.b.Load() }

// Bind tells the bridge that identity is held, with its auto-mail switch.
func (h *mailHooks) Bind(identity string, autoMail bool) {
	b := h.bridge()
	if b == nil {
		return
	}
	if err := b.Bind(identity); err != nil {
		h.log.Warn("cannot watch the inbox", "identity", identity, "err", err)
		return
	}
	b.SetAutoMail(identity, autoMail)
}

// Unbind tells the bridge that identity is no longer held.
func (h *mailHooks) Unbind(identity string) {
	if b := h.bridge(); b != nil {
		b.Unbind(identity)
	}
}

// Idle is the post-turn mail check (FR-8.1).
func (h *mailHooks) Idle(identity string) {
	if b := h.bridge(); b != nil {
		b.Idle(identity)
	}
}

// Stats returns the bridge's counters for identity.
func (h *mailHooks) Stats(identity string) session.MailStats {
	b := h.bridge()
	if b == nil {
		return session.MailStats{}
	}
	st := b.Stats(identity)
	return session.MailStats{AutoMail: st.AutoMail, Batches: st.Batches, Delivered: st.Delivered, InFlight: st.InFlight,
		LastDelivery: st.LastDelivery, LastError: st.LastError, Pending: st.Pending, Polling: st.Polling}
}

// close stops the bridge, if it runs.
func (h *mailHooks) close() error {
	if b := h.bridge(); b != nil {
		return b.Close()
	}
	return nil
}

// mailTarget delivers mail to sessions (mailbridge.Target).
type mailTarget struct{ s *Server }

// Deliver starts an auto-mail turn on the session bound to identity, only
// if that session is idle with nothing queued and auto-mail on (FR-8.10,
// FR-17.6), and its own agent is up or comes up by itself
// (Session.MailPaused: for a Codex session, codex.MailPaused; another
// kind's crash never holds it).
// done reports whether Codex took the turn (session.TryMail: acknowledged,
// or written to a child that lives on; then the mail is marked read), or
// not (the child died before acknowledging it: the mail stays unread and
// resumeMail offers it again after the restart).
func (t mailTarget) Deliver(identity, prompt string, msgs []atmclient.Message, done func(sent bool)) bool {
	sess := t.s.sessions.ByIdentity(identity)
	if sess == nil || t.s.sessions.Closing() || sess.MailPaused() {
		return false // its agent down: the mail waits, unread, for resumeMail
	}
	if !t.s.frames.takesMail(identity) {
		return false // a shutdown request is closing the session
	}
	return sess.TryMailThen(prompt, done, t.s.frames.mailEnded(identity, sess.Record().AgentID, msgs))
}

// resumeMail asks the bridge to check every bound identity: after a
// restart, the mail paused while Codex was down is delivered.
func (s *Server) resumeMail() {
	for identity := range s.sessions.Live() {
		s.mail.Idle(identity)
	}
}

// onBatch is the bridge's report of a batch marked read: the lead's push
// hears of its own (flush waits for it), and every batch is audited.
func (s *Server) onBatch(b mailbridge.Batch) {
	s.lead.marked(b)
	s.auditBatch(b)
}

// auditBatch records an injected batch of mail (FR-9).
func (s *Server) auditBatch(b mailbridge.Batch) {
	var agentID string
	if sess := s.sessions.ByIdentity(b.Identity); sess != nil {
		agentID = sess.Record().AgentID
	}
	outcome := fmt.Sprintf("delivered %d message(s) (%s), marked %d read", len(b.Keys), strings.Join(b.Keys, ", "), b.Marked)
	if b.Err != nil {
		outcome += "; mark failed: " + b.Err.Error()
	}
	s.auditor.Append(registry.Entry{Event: "turn:auto-mail", AgentID: agentID, Identity: b.Identity,
		Summary: fmt.Sprintf("%d message(s)", len(b.Keys)), Outcome: outcome})
}
