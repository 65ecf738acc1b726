package backend

import "context"

// What a backend can do beyond Backend is asked of it, never inferred from
// its kind's name: each capability is an optional interface, and a backend
// that lacks one has the documented default. The helpers below ask, so
// that a caller never type-asserts by hand.

// Starter is what a backend that can start its child before the first
// call offers (every Codex backend).
type Starter interface {
	// Start starts the child and does its handshake now; it returns the
	// start's error, or nil when the child had started already.
	Start(ctx context.Context) error
}

// Steerer is what a backend that can add input to a running turn offers
// (Codex app-server's turn/steer). A backend that has it only for some
// children (Codex's auto backend) returns ErrUnsupported for the others.
type Steerer interface {
	// Steer adds input to the running turn of a thread. nil means the
	// agent took it into that turn; a *SteerError (ErrNotSteered,
	// steer.go) means it certainly did not (no running turn, the turn
	// ended first, a refusal), so the caller delivers it as a turn; any
	// other error leaves it unknown.
	Steer(ctx context.Context, threadID, text string) error
}

// Sandboxed is what a backend whose agents run in a sandbox that their
// thread's settings choose offers (Codex's sandbox: read-only,
// workspace-write, …). The operator's read-only policy holds such a thread
// by its settings (a read-only sandbox, nothing that could widen it).
// Without it (an ACP agent runs with the rights of serve) the policy can
// hold a thread only by denying its agent's requests to run a command or
// to change files.
type Sandboxed interface {
	Sandboxed() bool
}

// Configurable is what a backend whose agents take settings of their own,
// besides the neutral ones of ThreadParams, offers (Codex: its sandbox,
// approval policy, config overrides, …). A session of a kind whose backend
// does not name a setting refuses it.
type Configurable interface {
	// Settings are the names of those settings as the tools' arguments
	// name them ("approval-policy", "sandbox", …), sorted.
	Settings() []string
	// Options makes ThreadParams.Options from the values of those
	// settings, by name: a string each, "config" a map[string]any (JSON
	// values). Names it does not take are ignored; empty values are not
	// sent.
	Options(values map[string]any) any
}

// WholeRestarter is what a backend whose one child runs every thread
// offers (Codex): the child is restarted as a whole (by whoever supervises
// it: serve's agent_restart_codex), every thread waits for it meanwhile,
// and the errors of its turns carry that supervisor's advice (a
// *RecoveryError). Without it, a backend runs one process per thread (an
// ACP agent's) and starts a dead thread's process again at its next turn,
// continuing the conversation.
type WholeRestarter interface {
	RestartsAsWhole() bool
}

// Named is what a backend that has a name for people offers ("Codex"), for
// questions and messages about its agents ("Allow Codex to run …").
// Without it, the kind's own name serves ("claude").
type Named interface {
	Name() string
}

// Availability is what a backend that can be down for a while (a
// supervised child in manual restart mode, a crash loop) offers: nil when
// a turn can run now (or the turn itself starts the child again, or waits
// for a restart in progress), else the error that says why not and what
// brings the agent back. A caller asks it before it records or queues
// anything, so that a client retrying in a loop writes nothing each time.
type Availability interface {
	Unavailable() error
}

// MailPauser is what a backend whose agent can be down for a while and come
// back offers: whether mail to its threads must wait, unread, until it is
// back (its restart, or the next turn, starts it again). Only a session's
// own backend is asked: another kind's crash never holds its mail.
type MailPauser interface {
	MailPaused() bool
}

// IsSandboxed reports whether b is Sandboxed and says so.
func IsSandboxed(b any) bool {
	s, ok := b.(Sandboxed)
	return ok && s.Sandboxed()
}

// SettingsOf returns the settings of its own that b takes (Configurable),
// nil when it takes none.
func SettingsOf(b any) []string {
	if c, ok := b.(Configurable); ok {
		return c.Settings()
	}
	return nil
}

// RestartsAsWhole reports whether b is a WholeRestarter and says so.
func RestartsAsWhole(b any) bool {
	w, ok := b.(WholeRestarter)
	return ok && w.RestartsAsWhole()
}

// NameOf is how people call the agents of b, whose kind is kind: its own
// name when it is Named, else kind.
func NameOf(b any, kind string) string {
	if n, ok := b.(Named); ok && n.Name() != "" {
		return n.Name()
	}
	return kind
}

// Unavailable asks b whether its agent is down (Availability); nil for a
// backend that cannot tell.
func Unavailable(b any) error {
	if a, ok := b.(Availability); ok {
		return a.Unavailable()
	}
	return nil
}

// MailPaused asks b whether mail to its threads must wait (MailPauser);
// false for a backend that cannot tell.
func MailPaused(b any) bool {
	p, ok := b.(MailPauser)
	return ok && p.MailPaused()
}
