package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// frameSendTimeout bounds one frame sent back (a shutdown_response, an
// idle_notification): a few waits for the inbox locks.
const frameSendTimeout = 10 * time.Second

// frames speaks Claude Code's team protocol for the Codex agents: it
// answers the frames the mail bridge hands over (onFrame, the bridge's
// OnFrame) and tells the senders of a mail turn that the agent is idle
// again (mailEnded). A shutdown_request closes the session as agent_close
// does and is answered with a shutdown_response; other frames are logged.
//
// Design notes. onFrame runs on the bridge's goroutine for the identity and
// must not block: a shutdown runs on a goroutine of its own, counted in wg,
// which serve's shutdown waits for (wait). Once wait has begun, a request
// that still arrives (the bridge stops after the sessions) is carried out
// on the bridge's goroutine instead: its session is closed already, so
// that is only the answer. mu guards the maps and closed, and every wg.Add;
// nothing is called with it held.
type frames struct {
	s  *Server
	wg sync.WaitGroup

	mu       sync.Mutex
	answered map[string]bool // shutdown requests handled, by requestId (or message key)
	ending   map[string]int  // identities whose shutdown runs: their mail waits
	closed   bool            // wait has begun: no more goroutines
}

func newFrames(s *Server) *frames {
	return &frames{s: s, answered: map[string]bool{}, ending: map[string]int{}}
}

// onFrame is what a protocol frame addressed to identity means here
// (mailbridge.Config.OnFrame). The bridge marks the frame read once this
// returns (for a Codex identity), so everything that matters is decided
// before: a repeated shutdown request is recognised, and a shutdown's
// identity takes no more mail.
func (fr *frames) onFrame(identity string, m atmclient.Message, f atmclient.Frame) {
	log := fr.s.log.With("identity", identity, "frame", f.Type, "from", m.From)
	if identity == fr.s.opts.Identity && fr.s.sessions.ByIdentity(identity) == nil {
		// The inbox of serve's client (the lead, bound with BindTarget):
		// its frames are for Claude Code's own reader, which shows them;
		// the bridge leaves them unread.
		log.Debug("protocol frame for serve's client; left to its own reader", "request_id", f.RequestID)
		return
	}
	switch f.Type {
	case atmclient.FrameShutdownRequest:
		id := f.RequestID
		if id == "" {
			id = m.Key()
		}
		fr.mu.Lock()
		seen, closed := fr.answered[id], fr.closed
		fr.answered[id] = true
		if !seen {
			fr.ending[identity]++
			if !closed {
				fr.wg.Add(1)
			}
		}
		fr.mu.Unlock()
		if seen {
			log.Debug("shutdown request already handled", "request_id", f.RequestID)
			return
		}
		log.Info("shutdown requested", "request_id", f.RequestID, "reason", f.Reason)
		if closed {
			fr.shutdown(identity, m, f) // serve is shutting down: the session is closed already
			return
		}
		go func() {
			defer fr.wg.Done()
			fr.shutdown(identity, m, f)
		}()
	case atmclient.FrameIdleNotification, atmclient.FrameShutdownResponse, "shutdown_approved", "shutdown_rejected":
		// A teammate's news for a Codex agent: nothing to do here.
		log.Debug("protocol frame for an agent; nothing to do", "request_id", f.RequestID, "idle_reason", f.IdleReason)
	default:
		// plan_approval_request, permission_request and the rest: a Codex
		// agent has no plan mode, and its approvals go to serve's client
		// over MCP; nobody here can answer them.
		log.Info("protocol frame not handled: marked read, not shown to the agent", "request_id", f.RequestID)
		var agentID string
		if sess := fr.s.sessions.ByIdentity(identity); sess != nil {
			agentID = sess.Record().AgentID
		}
		fr.s.auditor.Append(registry.Entry{Event: "frame:" + f.Type, AgentID: agentID, Identity: identity, Recipient: m.From,
			Summary: m.Text, Outcome: "not handled"})
	}
}

// shutdown closes identity's session as agent_close does (a busy session's
// turn is interrupted and it is asked for a summary; the identity is
// released), then answers the request with approve: true from identity to
// the requester.
func (fr *frames) shutdown(identity string, m atmclient.Message, f atmclient.Frame) {
	defer func() {
		fr.mu.Lock()
		if fr.ending[identity]--; fr.ending[identity] <= 0 {
			delete(fr.ending, identity)
		}
		fr.mu.Unlock()
	}()
	s := fr.s
	outcome := "no live session"
	var agentID string
	if sess := s.sessions.ByIdentity(identity); sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.SummaryTimeout+frameSendTimeout)
		out := s.sessions.Close(ctx, sess, false)
		cancel()
		agentID = out.Record.AgentID
		outcome = fmt.Sprintf("session %s", out.Record.Status)
		if out.Already {
			outcome += " (already)"
		}
	}
	to := f.From
	if to == "" {
		to = m.From
	}
	text := atmclient.ShutdownResponseText(f.RequestID, true, "")
	ctx, cancel := context.WithTimeout(context.Background(), frameSendTimeout)
	_, err := s.atm.Send(ctx, atmclient.SendRequest{From: identity, Team: s.opts.Team, To: to, Text: text,
		Summary: "shutdown approved"})
	cancel()
	if err != nil {
		outcome += "; answer failed: " + err.Error()
		s.log.Warn("cannot answer the shutdown request", "identity", identity, "to", to, "request_id", f.RequestID, "err", err)
	} else {
		outcome += "; answered approve"
		s.log.Info("shutdown request answered", "identity", identity, "to", to, "request_id", f.RequestID, "agent_id", agentID)
	}
	s.auditor.Append(registry.Entry{Event: atmclient.FrameShutdownRequest, AgentID: agentID, Identity: identity,
		Recipient: to, Summary: f.Reason, Outcome: outcome})
}

// takesMail reports whether identity may start a mail turn: not while a
// shutdown request for it is being carried out.
func (fr *frames) takesMail(identity string) bool {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.ending[identity] == 0
}

// mailEnded returns what runs when the mail turn that carries msgs ends on
// identity's session (agentID): each distinct sender of msgs but identity
// itself gets the idle_notification a native teammate sends, written as
// Claude Code writes it (no summary beside the frame, else its lead shows
// the JSON as text), so that Claude Code's lead shows "Teammate @identity
// finished". For serve's own client, the lead, whose mail goes through
// Claude Code's messaging socket (its lead does not read that inbox), the
// news is pushed there instead, as text a person reads
// (leadPush.pushIdle); the frame goes to the inbox when the push cannot
// take it. It returns nil when there is nobody to tell.
func (fr *frames) mailEnded(identity, agentID string, msgs []atmclient.Message) func(*session.TurnResult, error) {
	team := fr.s.opts.Team
	var to []string
	seen := map[string]bool{}
	for _, m := range msgs {
		agent, t, err := atmclient.SplitAddress(m.From)
		if err != nil {
			continue
		}
		if t == "" {
			t = team
		}
		if (agent == identity && t == team) || seen[agent+"@"+t] {
			continue
		}
		seen[agent+"@"+t] = true
		to = append(to, m.From)
	}
	if len(to) == 0 {
		return nil
	}
	return func(r *session.TurnResult, err error) {
		n := idleNotification(identity, r, err)
		n.Timestamp = fr.s.opts.Now()
		text := n.Text()
		for _, addr := range to {
			if fr.isLead(addr) && fr.s.lead.pushIdle(context.Background(), n) {
				fr.s.log.Debug("idle notification pushed to the session", "identity", identity, "to", addr, "idle_reason", n.IdleReason)
				fr.s.auditor.Append(registry.Entry{Event: atmclient.FrameIdleNotification, AgentID: agentID, Identity: identity, Recipient: addr,
					Summary: n.Summary, Outcome: "pushed to the session"})
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), frameSendTimeout)
			_, serr := fr.s.atm.Send(ctx, atmclient.SendRequest{From: identity, Team: team, To: addr, Text: text})
			cancel()
			outcome := "ok"
			switch {
			case errors.Is(serr, atmclient.ErrNotMember):
				// Someone outside the team's config.json (the atm CLI's
				// "human", say) wrote to the inbox: nobody to tell.
				outcome = "error: " + serr.Error()
				fr.s.log.Debug("idle notification not sent: the sender is not a member", "identity", identity, "to", addr, "err", serr)
			case serr != nil:
				outcome = "error: " + serr.Error()
				fr.s.log.Warn("cannot send the idle notification", "identity", identity, "to", addr, "err", serr)
			default:
				fr.s.log.Debug("idle notification sent", "identity", identity, "to", addr, "idle_reason", n.IdleReason)
			}
			fr.s.auditor.Append(registry.Entry{Event: atmclient.FrameIdleNotification, AgentID: agentID, Identity: identity, Recipient: addr,
				Summary: n.Summary, Outcome: outcome})
		}
	}
}

// isLead reports whether addr (an address of the serve's team) names serve's
// own client, the lead, while no Codex session holds its identity.
func (fr *frames) isLead(addr string) bool {
	agent, team, err := atmclient.SplitAddress(addr)
	if err != nil || (team != "" && team != fr.s.opts.Team) {
		return false
	}
	return agent == fr.s.opts.Identity && fr.s.sessions.ByIdentity(agent) == nil
}

// idleNotification says how a mail turn ended: "available" with its
// result when it completed, "interrupted" when it was interrupted (an
// agent_interrupt, a close), "failed" with the error otherwise.
func idleNotification(identity string, r *session.TurnResult, err error) atmclient.IdleNotification {
	n := atmclient.IdleNotification{From: identity}
	switch {
	case err != nil:
		n.IdleReason, n.Summary, n.Result = atmclient.IdleFailed, "turn failed", err.Error()
	case r == nil:
		n.IdleReason, n.Summary = atmclient.IdleFailed, "turn failed"
	case r.Status == "interrupted":
		n.IdleReason, n.Summary, n.Result = atmclient.IdleInterrupted, "turn interrupted", r.Text
	case r.IsError || r.Status == "failed":
		n.IdleReason, n.Summary, n.Result = atmclient.IdleFailed, "turn failed", r.Text
	default:
		n.IdleReason, n.Result = atmclient.IdleAvailable, r.Text
		n.Summary = atmclient.Summarize(firstLine(r.Text))
		if n.Summary == "" {
			n.Summary = "turn completed"
		}
	}
	return n
}

// firstLine returns s up to its first line break, trimmed.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// wait waits at most d for the shutdowns under way; it is called once, by
// serve's shutdown.
func (fr *frames) wait(d time.Duration) bool {
	fr.mu.Lock()
	fr.closed = true
	fr.mu.Unlock()
	done := make(chan struct{})
	go func() { fr.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
