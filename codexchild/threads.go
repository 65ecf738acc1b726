package codexchild

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"log/slog"
	"strings"
	"sync"
)

// This file is the mcp-server backend's thread policy: which thread a turn
// runs on. Codex's mcp-server cannot load a thread another process ran, and
// a thread whose request was cancelled may still deliver that request's
// results under a later one (the stale-listener bug,
// docs/codex-wire.md#stale-listener). So a turn on a thread this child has
// never run, or whose last turn was interrupted, starts a fresh thread in
// its place, seeded with what the agent should know of the old one.

// maxSaid bounds the agent messages kept per thread.
const maxSaid = 20

// threadBook is what the backend knows of threads: those this child has
// run, those whose last turn was interrupted, and each thread's last agent
// messages. mu guards it; it is a leaf lock.
type threadBook struct {
	mu      sync.Mutex
	known   map[string]bool
	tainted map[string]bool
	said    map[string][]string
}

func newThreadBook() *threadBook {
	return &threadBook{known: map[string]bool{}, tainted: map[string]bool{}, said: map[string][]string{}}
}

// Why mcp-server runs a turn on a new thread in place of the one asked for
// (Result.Replaced).
const (
	replacedUnknown     = "codex mcp-server cannot continue a thread that another Codex process ran"
	replacedInterrupted = "its last turn was interrupted, and codex mcp-server may then deliver that turn's output into the next one; " +
		"the new thread was given the agent's last messages there"
)

// plan returns the turn to send for req — req itself, or a new thread in
// place of req.ThreadID — the agent messages the new thread inherits, and
// why it replaces req.ThreadID ("" when it does not). running says a turn
// runs on req.ThreadID in this child now.
func (tb *threadBook) plan(req backend.TurnRequest, running bool, log *slog.Logger) (backend.TurnRequest, []string, string) {
	if req.ThreadID == "" {
		return req, nil, ""
	}
	tb.mu.Lock()
	known := tb.known[req.ThreadID] || running
	tainted, said := tb.tainted[req.ThreadID], tb.said[req.ThreadID]
	tb.mu.Unlock()
	if req.SameThread || known && !tainted {
		req.Prompt = req.Preamble + req.Prompt
		return req, nil, ""
	}
	note, reason := req.Seed, replacedUnknown
	if known {
		reason = replacedInterrupted
		if last := interruptedNote(req.ThreadID, said); last != "" {
			note = strings.TrimSpace(req.Seed + "\n\n" + last)
		}
	}
	log.Info("continuing the session on a new Codex thread", "old_thread", req.ThreadID, "reason", reason)
	if note != "" {
		req.Params.DeveloperInstructions = note + "\n\n" + req.Params.DeveloperInstructions
	}
	req.ThreadID = ""
	return req, said, reason
}

// remember records what a turn tells about its thread: it ran here, it was
// interrupted, what the agent said (after the messages carried over from
// the thread it replaced).
func (tb *threadBook) remember(res *backend.Result, threadID string, carried, texts []string) {
	if res != nil && res.ThreadID != "" {
		threadID = res.ThreadID
	}
	if threadID == "" {
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	said := tb.said[threadID]
	if said == nil {
		said = append([]string(nil), carried...)
	}
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			said = append(said, clip(t, 2000))
		}
	}
	if len(said) > maxSaid {
		said = said[len(said)-maxSaid:]
	}
	tb.said[threadID] = said
	if res != nil {
		tb.known[threadID] = true
		if res.Status == "interrupted" {
			tb.tainted[threadID] = true
		}
	}
}

// interruptedNote seeds the fresh thread that follows an interrupted one
// with the agent's last messages there.
func interruptedNote(threadID string, msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	if len(msgs) > 5 {
		msgs = msgs[len(msgs)-5:]
	}
	var b strings.Builder
	b.WriteString("[Previous thread " + threadID + " was interrupted — your last messages there]\n")
	for _, m := range msgs {
		b.WriteString("- " + clip(m, 1000) + "\n")
	}
	b.WriteString("[End of previous thread]")
	return b.String()
}

// clip cuts s (trimmed) to n characters on a character boundary, adding
// "…" when it cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
