package session

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// This file is a fork (agent_fork): a new session, with an agent_id and an
// identity of its own, that starts from another session's history. Where
// the source's backend can (backend.Forker: Codex app-server's
// thread/fork), the new session's thread is the agent's own fork of the
// source's thread: its model has every turn of it. Where it cannot (Codex
// mcp-server, an ACP agent), the new session is told what this serve knows
// of the source (its saved summary, else its recent agent messages and
// last result: ForkRequest.Tell), in front of the prompt of its first
// turn. The registry records the parent and how (registry.Session.
// ForkedFrom); the fork is of the source's kind, with its settings, role
// and tag, and with its isolation unless the request names one.

// ForkRequest asks for a fork of a live session.
type ForkRequest struct {
	// Source is the session to fork: live, with a thread.
	Source *Session
	// Identity is the new session's identity. required.
	Identity string
	// Isolation is the new session's isolation (IsolationWorktree,
	// IsolationNone). optional: "" means the source's.
	Isolation string
	// Base is where an isolated fork's branch starts. optional: "" means
	// the source's branch when the source is isolated too, else the HEAD
	// of the checkout.
	Base string
	// StartHead is, for a fork without isolation, the commit its
	// checkout is at (CreateRequest.StartHead). optional.
	StartHead string
	// Tell says what a fork whose backend cannot fork the thread is told
	// of the source, and which it is (registry.ForkSummary or
	// registry.ForkTranscript). required.
	Tell func(src *Session) (text, how string)
}

// Fork makes a new session from r.Source's history and leaves it idle: the
// caller runs its first turn, if it has a prompt. A source that is not
// live is SESSION_CLOSED, one without a thread yet INVALID_PARAMS; an
// agent that refuses the fork (the source's thread is not in its storage)
// is INVALID_SESSION_PARAMS, and nothing is kept.
func (m *Manager) Fork(ctx context.Context, r ForkRequest) (*Session, error) {
	src := r.Source.Record()
	if !src.Status.Live() {
		return nil, proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": src.AgentID, "status": string(src.Status)},
			"session %s is %s: only a live session is forked; resume it first (codex or agent_start with its agent_id)", src.AgentID, src.Status)
	}
	if src.BackendID == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"agent_id": src.AgentID},
			"session %s has no thread yet (its first turn has not started): there is no history to fork", src.AgentID)
	}
	r.Source.mu.Lock()
	settings := r.Source.params
	r.Source.mu.Unlock()
	req := CreateRequest{Identity: r.Identity, Cwd: src.Cwd, Tag: src.Tag, Role: src.Role, AgentFile: src.AgentSource, Agent: src.Kind(),
		Host: src.Host, Settings: settings, Isolation: firstNonEmpty(r.Isolation, IsolationNone), Base: r.Base, StartHead: r.StartHead}
	if w := src.Worktree; w != nil {
		if r.Isolation == "" {
			req.Isolation = IsolationWorktree
		}
		if req.Isolation == IsolationWorktree {
			// Made from the lead's checkout (the source's worktree's
			// source), in the same directory, on top of the source's
			// branch: its commits are where the history left the files.
			req.Cwd = sourceCwd(src.Cwd, w)
			req.Base = firstNonEmpty(r.Base, w.Branch)
		}
	}
	if req.Isolation != IsolationWorktree {
		req.Base = ""
	}
	s, err := m.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	fork := &registry.Fork{AgentID: src.AgentID, Thread: src.BackendID}
	b, err := m.cat.of(s.Record())
	if err == nil {
		var thread string
		thread, err = s.forkThread(ctx, b, src.BackendID)
		switch {
		case err == nil:
			fork.How = registry.ForkThread
			s.mu.Lock()
			s.rec.BackendID = thread
			s.mu.Unlock()
		case errors.Is(err, backend.ErrUnsupported):
			err = nil
			text, how := r.Tell(r.Source)
			fork.How = how
			s.mu.Lock()
			s.told = text
			s.mu.Unlock()
		}
	}
	if err != nil {
		m.Discard(context.WithoutCancel(ctx), s, err)
		if errors.Is(err, backend.ErrForkRefused) {
			return nil, proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, map[string]any{"agent_id": src.AgentID, "thread": src.BackendID},
				"%s refused to fork session %s (thread %s): %v", m.cat.Name(src.Kind()), src.AgentID, src.BackendID, err)
		}
		return nil, turnError(src, b, err)
	}
	s.mu.Lock()
	s.rec.ForkedFrom = fork
	setState(&s.rec, stateIdle, m.now())
	rec := s.rec
	s.mu.Unlock()
	m.persist.now(s)
	s.changed()
	m.cfg.changed()
	m.cfg.Audit.Session("session_forked", rec, "from "+src.AgentID+" (thread "+src.BackendID+", "+fork.How+")")
	m.log.Info("session forked", "agent_id", rec.AgentID, "identity", rec.Identity, "from", src.AgentID, "how", fork.How)
	return s, nil
}

// forkThread asks b to fork thread for s, with s's own thread parameters
// (its cwd, its context, its tool server); ErrUnsupported when b cannot.
func (s *Session) forkThread(ctx context.Context, b Backend, thread string) (string, error) {
	f, ok := b.(backend.Forker)
	if !ok {
		return "", backend.ErrUnsupported
	}
	rec := s.Record()
	facts := s.m.cfg.Git.Facts(ctx, rec.Cwd)
	sc := sessionContext{AgentID: rec.AgentID, Identity: rec.Identity, Team: s.m.cfg.Team, Cwd: rec.Cwd, Repo: facts,
		Tools: len(s.m.cfg.ToolServer) > 0, Extra: s.m.cfg.ExtraInstructions, Place: s.Place()}
	_, params := s.turnContext(sc, b)
	res, err := f.Fork(ctx, backend.ForkRequest{ThreadID: thread, Params: params})
	if err != nil {
		return "", err
	}
	return res.ThreadID, nil
}

// sourceCwd maps cwd inside the worktree w to the same directory in the
// checkout w was made from.
func sourceCwd(cwd string, w *registry.Worktree) string {
	rel, err := filepath.Rel(w.Path, cwd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return w.Source
	}
	return filepath.Join(w.Source, rel)
}

// ForkNote is what a fork that could not fork its source's thread is told,
// in front of its first prompt: what the source is, and text (its summary
// or its recent messages).
func ForkNote(src registry.Session, what, text string) string {
	return "[You are a fork of session " + src.AgentID + " (" + src.Identity + "): it worked before you, and you go on from " +
		"where it was. Its agent could not hand you its history, so here is " + what + ":]\n" + strings.TrimSpace(text) +
		"\n[End of the forked session's history]\n\n"
}
