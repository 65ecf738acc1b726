package proxy

import (
	"context"
	"fmt"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/mailbridge"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// startMail starts the mail bridge (FR-8) and binds the sessions that are
// already live (resumed at start-up).
func (s *Server) startMail() error {
	b, err := mailbridge.New(mailbridge.Config{
		ATM: s.atm, Team: s.opts.Team, Target: s,
		PollInterval: s.opts.MailPollInterval, IdleTimeout: s.opts.MailIdleTimeout, MaxMessages: s.opts.MaxMailMessages, MaxMessageLength: s.opts.MaxMailMessageLength,
		OnBatch: s.auditBatch, Logger: s.log, Now: s.now,
	})
	if err != nil {
		return err
	}
	if err := b.Start(s.ctx); err != nil {
		return err
	}
	s.smu.Lock()
	s.mail = b
	live := make([]*session, 0, len(s.byIdentity))
	for _, sess := range s.byIdentity {
		live = append(live, sess)
	}
	s.smu.Unlock()
	for _, sess := range live {
		s.bindMail(sess)
	}
	return nil
}

// bindMail tells the bridge that sess holds its identity, with its
// auto-mail switch. It is a no-op before the bridge starts.
func (s *Server) bindMail(sess *session) {
	if s.mail == nil {
		return
	}
	sess.mu.Lock()
	identity, on := sess.rec.Identity, sess.autoMail
	sess.mu.Unlock()
	if err := s.mail.Bind(identity); err != nil {
		s.log.Warn("cannot watch the inbox", "identity", identity, "err", err)
		return
	}
	s.mail.SetAutoMail(identity, on)
}

// Deliver implements mailbridge.Target: it starts an auto-mail turn on the
// session bound to identity, only if that session is idle with nothing
// queued and auto-mail on (FR-8.10, FR-17.6). done reports whether the turn's
// request was written to the child (then the mail is marked read).
func (s *Server) Deliver(identity, prompt string, done func(sent bool)) bool {
	s.smu.Lock()
	sess := s.byIdentity[identity]
	s.smu.Unlock()
	if sess == nil || s.isClosing() {
		return false
	}
	var once sync.Once
	report := func(sent bool) { once.Do(func() { done(sent) }) }
	j := &job{
		source: sourceMail,
		run: func(ctx context.Context) func() {
			_, err := s.turn(ctx, sess, turnInput{prompt: prompt, source: sourceMail, onSent: func() { report(true) }})
			report(false)
			if err != nil {
				s.log.Warn("auto-mail turn failed", "agent_id", sess.agentID(), "identity", identity, "err", err)
			}
			return nil
		},
		discard: func(error) { report(false) },
	}
	return sess.tryMail(j)
}

// auditBatch records an injected batch of mail (FR-9).
func (s *Server) auditBatch(b mailbridge.Batch) {
	var agentID string
	s.smu.Lock()
	if sess := s.byIdentity[b.Identity]; sess != nil {
		agentID = sess.agentID()
	}
	s.smu.Unlock()
	outcome := fmt.Sprintf("delivered %d message(s), marked %d read", len(b.Keys), b.Marked)
	if b.Err != nil {
		outcome += "; mark failed: " + b.Err.Error()
	}
	s.appendAudit(registry.Entry{Event: "turn:auto-mail", AgentID: agentID, Identity: b.Identity,
		Summary: fmt.Sprintf("%d message(s)", len(b.Keys)), Outcome: outcome})
}
