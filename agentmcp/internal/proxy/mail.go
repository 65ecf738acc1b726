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
//
// Mail to a session whose turn runs is added to that turn instead
// (session.TrySteerMail), in the same envelope, when busy_mail says so for
// its senders (steersMail) and the session's backend can steer; done then
// reports whether the agent took it, and mail it did not take goes as a
// turn once the running one has ended.
func (t mailTarget) Deliver(identity, prompt string, msgs []atmclient.Message, done func(sent bool)) bool {
	sess := t.s.sessions.ByIdentity(identity)
	if sess == nil || t.s.sessions.Closing() || sess.MailPaused() {
		return false // its agent down: the mail waits, unread, for resumeMail
	}
	if !t.s.frames.takesMail(identity) {
		return false // a shutdown request is closing the session
	}
	rec := sess.Record()
	ended := t.s.frames.mailEnded(identity, rec.AgentID, msgs)
	if sess.TryMailThen(prompt, done, ended) {
		return true
	}
	return t.s.steersMail(rec.Role, msgs) && sess.TrySteerMail(prompt, done, ended)
}

// The values of busy_mail (Options.BusyMail).
const (
	BusyMailSteer = "steer"
	BusyMailQueue = "queue"
)

// steersMail reports whether a batch of mail to a busy agent of role is
// steered into its running turn: busy_mail of the role, else of serve;
// when neither is set, only when every message is from the lead (serve's
// own identity: its client's instructions are worth the interruption; a
// teammate's mail waits for the turn's end, as it always did).
func (s *Server) steersMail(role string, msgs []atmclient.Message) bool {
	policy := s.opts.BusyMail
	if v := s.opts.RoleBusyMail[role]; v != "" {
		policy = v
	}
	switch policy {
	case BusyMailSteer:
		return true
	case BusyMailQueue:
		return false
	}
	for _, m := range msgs {
		if !s.frames.isLead(m.From) {
			return false
		}
	}
	return len(msgs) > 0
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
