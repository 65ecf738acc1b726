package session

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// This file is what a resume continues: the agent's own thread whenever the
// backend still has it (Codex app-server thread/resume, ACP session/load or
// session/resume), else a new thread told what the proxy kept of the old
// one (its saved summary, else its last result: the seed). A turn that
// resumed a session, or that ran on a new thread in place of the
// session's, says which in its result (ThreadNote), so that the client is
// never told "completed" by an agent that silently forgot.

// ThreadNote says whether a turn continued the session's thread. It is
// given for the first turn after a resume, and for any turn that ran on a
// new thread in place of the session's (the backend could not continue
// it). Its fields are in the order of their JSON names.
type ThreadNote struct {
	// Continued: the turn ran on the session's own thread, whose history
	// the agent has.
	Continued bool `json:"continued"`
	// Given is what the new thread was told of the old one: "its saved
	// summary", "its last result", "its last messages", or "" (nothing
	// the proxy knows of). Only when not Continued.
	Given string `json:"given,omitempty"`
	// PreviousThreadID is the thread the turn could not continue. Only
	// when not Continued.
	PreviousThreadID string `json:"previous_thread_id,omitempty"`
	// Reason says why it could not. Only when not Continued.
	Reason string `json:"reason,omitempty"`
	// Resumed: the first turn after the session was resumed (codex or
	// agent_start with agent_id, serve --resume).
	Resumed bool `json:"resumed"`
}

// Text is the line put in front of the result's text when the thread was
// not continued ("" when it was).
func (n *ThreadNote) Text() string {
	if n == nil || n.Continued {
		return ""
	}
	given := "nothing of it"
	if n.Given != "" {
		given = n.Given
	}
	what := "the session had no thread"
	if n.PreviousThreadID != "" {
		what = "the agent's thread " + n.PreviousThreadID + " could not be continued"
	}
	return fmt.Sprintf("[Not the same thread: %s (%s). This turn ran on a new thread, given %s; the agent does not remember the rest.]",
		what, n.Reason, given)
}

// resumeMark is what Rebind leaves for the session's next turn: that it
// resumes the session.
type resumeMark struct{}

// threadNote is the ThreadNote of a turn that asked for thread asked
// (the session's, "" for none) and got res; seedWhat says what the turn's
// seed was ("" for none). nil when the turn continued the session's
// thread and did not resume it.
func threadNote(resumed *resumeMark, asked string, res *backend.Result, seedWhat string) *ThreadNote {
	if res == nil {
		return nil
	}
	continued := asked != "" && res.ThreadID == asked && res.Replaced == ""
	if continued && resumed == nil {
		return nil
	}
	if !continued && resumed == nil && asked == "" {
		return nil // a new session's first thread
	}
	n := &ThreadNote{Continued: continued, Resumed: resumed != nil}
	if continued {
		return n
	}
	n.PreviousThreadID = asked
	switch {
	case res.Replaced != "":
		n.Reason, n.Given = res.Replaced, seedWhat
	case asked == "":
		n.Reason = "its first turn never reached the agent"
	case res.ThreadID == "":
		n.Reason = "the turn failed before it reached a thread: " + Clip(res.Text, 300)
		n.Given = seedWhat
	default:
		n.Reason = "the agent answered on another thread"
		n.Given = seedWhat
	}
	return n
}

// resumeSeed is what a resumed session's next thread is told of its old
// one when the backend cannot continue that thread (FR-6): the saved
// summary, in the form of docs/requirements.md#fr-6, else its last result
// as the registry kept it, else nothing (with a warning, FR-6.3). what
// names it for ThreadNote.Given.
func resumeSeed(reg Registry, log *slog.Logger, rec registry.Session) (seed, what string) {
	where := firstNonEmpty(rec.RepoName, "no-repo") + "/" + firstNonEmpty(rec.Branch, "no-branch")
	if rec.BackendID != "" {
		if t, err := reg.ReadSummary(rec.Identity, rec.BackendID); err == nil && strings.TrimSpace(t) != "" {
			return "[Previous session — " + rec.Identity + " on " + where + "]\n" + strings.TrimSpace(t) + "\n[End of previous session]", "its saved summary"
		}
	}
	if last := strings.TrimSpace(rec.LastResult); last != "" {
		log.Info("no saved summary: a new thread would be given the session's last result", "agent_id", rec.AgentID, "identity", rec.Identity)
		return fmt.Sprintf("[Previous session — %s on %s: no summary was saved. Your last answer in it (turn %d) was:]\n%s\n[End of previous session]",
			rec.Identity, where, rec.Turns, last), "its last result"
	}
	log.Warn("resuming without a summary or a last result (the previous process saved neither)", "agent_id", rec.AgentID, "identity", rec.Identity)
	return "", ""
}
