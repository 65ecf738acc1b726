package proxy

import (
	"context"
	"os"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccsession"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// handOverGrace is how long a running turn may go on before the proxy
// whose conversation moved away interrupts it to hand its session over.
const handOverGrace = 10 * time.Second

// Following a conversation that Claude Code moves to a background session
// (← "for agents"; docs/claude-code-agents-view.md). Claude Code forks the
// conversation into a background session with a new session id and new
// MCP servers, and marks the interactive session it left as parked to that
// session's job (ccsession). The two serves meet through the registry:
//
//   - the serve of the interactive session sees its client parked
//     (watchClient), hands every live session over to the background
//     session (session.Manager.HandOver: recorded stale with HandedTo,
//     identities released, no summary: the threads go on) and exits, so
//     that no serve runs on unseen with agents nobody can reach; it also
//     exits when its client is gone (it was reparented);
//   - the serve of the background session takes up the sessions handed to
//     it (takeUp): those its registry already holds (taken over from an
//     ended instance at start, or its own instance's), and, while the
//     conversation's earlier serve still runs, those it hands over a
//     moment later (registry.AdoptHandedTo once that serve has ended).
//     Taken up, a session is live again (session.Manager.Rebind): its
//     identity is claimed, it joins this session's team, so SendMessage
//     and codex-reply reach it, and its next turn continues its thread.

// clientEnd is why the client's side ended: the conversation moved to the
// background job (a short session id), or the client is gone.
type clientEnd struct {
	movedTo string // "" when the client is gone
}

// watchClient reads the record of the Claude Code session that started
// serve every ParkPoll until the conversation is parked or the client is
// gone, and says which on end; it returns when ctx ends. A serve with no
// client record (not started by an interactive Claude Code) only watches
// for its parent to go.
func (s *Server) watchClient(ctx context.Context, end chan<- clientEnd) {
	ppid, parent := s.opts.ClientPID, os.Getppid()
	rec, found := ccsession.Client(s.opts.Home, s.opts.MessagingSocket, ppid)
	if found {
		s.log.Debug("following the Claude Code session's record", "pid", rec.PID, "session", rec.SessionID, "kind", rec.Kind)
	}
	tick := time.NewTicker(s.opts.ParkPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if os.Getppid() != parent {
			s.log.Info("the Claude Code session that started serve is gone (serve was reparented): shutting down", "parent_pid", parent)
			end <- clientEnd{}
			return
		}
		if !found {
			// Claude Code may write its record after it started serve.
			if rec, found = ccsession.Client(s.opts.Home, s.opts.MessagingSocket, ppid); !found {
				continue
			}
		}
		if cur, ok := ccsession.Read(s.opts.Home, rec.PID); ok && cur.ParkedJobID != "" {
			s.log.Info("the conversation moved to a Claude Code background session: handing the agents over to its serve, then exiting",
				"session", cur.SessionID, "to", cur.ParkedJobID)
			end <- clientEnd{movedTo: cur.ParkedJobID}
			return
		}
	}
}

// handOver hands the live sessions over to the background job to and
// reports them in the log.
func (s *Server) handOver(to string) {
	ctx, cancel := context.WithTimeout(context.Background(), handOverGrace)
	defer cancel()
	for _, rec := range s.sessions.HandOver(ctx, to) {
		s.log.Info("agent handed over", "agent_id", rec.AgentID, "identity", rec.Identity, "to", to)
	}
}

// takeUp takes up the sessions handed over to this Claude Code session:
// at once those the registry holds, then, when this session continues a
// parked conversation, those of the registry's other instances as their
// serves end, checking every ParkPoll for at most TakeOverWait.
func (s *Server) takeUp(ctx context.Context) {
	short := ccsession.Short(s.opts.ClaudeSessionID)
	if s.rebindHanded(short, s.reg.List(registry.Filter{})) > 0 {
		return
	}
	from := ccsession.ParkedTo(s.opts.Home, short)
	if len(from) == 0 {
		return
	}
	s.log.Info("this Claude Code session continues a conversation moved from another: waiting for its agents",
		"from", from[0].SessionID, "for", s.opts.TakeOverWait)
	deadline := time.NewTimer(s.opts.TakeOverWait)
	defer deadline.Stop()
	tick := time.NewTicker(s.opts.ParkPoll)
	defer tick.Stop()
	for {
		if s.adoptHanded(short) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			s.log.Info("no agents were handed over by the conversation's earlier serve", "waited", s.opts.TakeOverWait)
			return
		case <-tick.C:
		}
	}
}

// adoptHanded moves the sessions handed to short from the registry's
// other instances whose serve has ended into this one and takes them up;
// it returns how many it took up.
func (s *Server) adoptHanded(short string) int {
	insts, err := s.reg.Dir().Scan()
	if err != nil {
		s.log.Warn("cannot read the registry for handed-over agents", "err", err)
		return 0
	}
	n := 0
	for _, inst := range insts {
		if inst.Identity == s.reg.Identity() || inst.Running || inst.Err != nil || !handedTo(inst.Sessions, short) {
			continue
		}
		adopted, err := s.reg.AdoptHandedTo(inst.Identity, short)
		if err != nil {
			s.log.Debug("the handed-over agents are not free yet", "instance", inst.Identity, "err", err)
			continue
		}
		n += s.rebindHanded(short, adopted)
	}
	return n
}

// handedTo reports whether any of sessions was handed over to short.
func handedTo(sessions []registry.Session, short string) bool {
	for _, rec := range sessions {
		if rec.HandedTo == short {
			return true
		}
	}
	return false
}

// rebindHanded makes the sessions of recs handed to short live here
// (session.Manager.Take, Rebind) and returns how many it took up; one
// whose identity is held meanwhile stays as it is, resumable.
func (s *Server) rebindHanded(short string, recs []registry.Session) int {
	n := 0
	for _, rec := range recs {
		if short == "" || rec.HandedTo != short {
			continue
		}
		sess := s.sessions.Take(rec)
		if err := s.sessions.Rebind(sess, session.SourceResume); err != nil {
			s.log.Warn("cannot take up a handed-over agent", "agent_id", rec.AgentID, "identity", rec.Identity, "err", err)
			continue
		}
		s.log.Info("agent taken up from the conversation's earlier serve", "agent_id", rec.AgentID, "identity", rec.Identity, "thread", rec.BackendID)
		n++
	}
	return n
}
