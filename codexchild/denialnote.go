package codexchild

import (
	"strings"
	"sync"
)

// This file tells an agent why an approval was denied where its protocol
// has no place for the reason. Measured: codex mcp-server shows the model
// the rejection it is given ({"denied":{"rejection":R}}); codex app-server's
// "decline" carries no reason, and the model reads Codex's own "rejected by
// user" ("patch rejected by user" for a patch); claude-agent-acp answers
// both its reject option and a cancelled request with "User refused
// permission to run tool". A denial nobody decided (a headless client that
// cancels every question, approval_fallback deny, a timeout) would read as
// a person's refusal. So the reason (Decision.Reason, which says who or
// what denied it) goes to the agent as a note: app-server steers the
// running turn with it (turn/steer), an ACP agent that advertises the
// steering extension (claude-agent-acp: _session/steering) gets it in its
// running turn too (package acpbackend), and what cannot be steered opens
// the thread's next prompt (threadNotes). The note itself is the seam's
// (backend.DenialNote), the same for every kind.

// threadNotes are notes waiting for the next prompt of their thread; mu
// is a leaf lock.
type threadNotes struct {
	mu    sync.Mutex
	notes map[string][]string
}

// add keeps note for the next prompt of thread.
func (n *threadNotes) add(thread, note string) {
	if thread == "" || note == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notes == nil {
		n.notes = map[string][]string{}
	}
	n.notes[thread] = append(n.notes[thread], note)
}

// take returns the notes of thread, each followed by a blank line, and
// forgets them.
func (n *threadNotes) take(thread string) string {
	n.mu.Lock()
	notes := n.notes[thread]
	delete(n.notes, thread)
	n.mu.Unlock()
	if len(notes) == 0 {
		return ""
	}
	return strings.Join(notes, "\n\n") + "\n\n"
}
