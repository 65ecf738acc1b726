// Package backend is the seam between the proxy's domain (package
// session) and the programs that run its agents: what every agent kind
// shares, in words of no particular protocol. A [Backend] runs the threads
// (sessions, in an agent's terms) of one kind: [TurnRequest] and
// [ThreadParams] in, [Event]s (in neutral terms: [Activity], with [Usage])
// and [Approval]s during a turn, a [Result] or an error out. The errors are
// one set for every kind: the sentinels, [ExitError] (how a child died),
// [TimeoutError], [NotFoundError] (a program that cannot be run) and
// [RecoveryError] (a dead child together with what brings it back).
//
// It is shaped as containerd's runtime v2 shapes its runtimes
// (core/runtime/v2/shim_manager.go): a runtime is chosen by name, the
// options only it understands pass through the manager opaque, and what a
// runtime can do besides the common interface is an optional interface
// asked of it. Here the name is the agent kind ("codex", "claude", a
// configured agent's name), chosen by the session's registry record; what
// only one kind understands (Codex's sandbox, approval policy, config
// overrides) is ThreadParams.Options, which the kind's own backend makes
// from the session's settings and reads; and what only some backends do
// is a capability (capabilities.go): [Sandboxed], [Configurable] (the
// settings a kind takes), [WholeRestarter] (one child for every thread),
// [Named], [Steerer] (input for a running turn; a [SteerError] when it was
// not taken), [Forker] (a thread from another's history),
// [StructuredOutputter] (an answer constrained to a JSON Schema, checked
// by package backend/outputschema the same way for every kind), [Starter],
// [Availability] and [MailPauser]. The
// domain asks these and never compares a kind's name, so that no code path
// forgets a kind, and this package names no protocol's types.
//
// The implementations: package codexchild (codex mcp-server and codex
// app-server, one child for every thread) and package acpbackend (agents
// that speak the Agent Client Protocol, one process per thread). Neither
// imports the other; both import this package, which imports neither.
// serve's composition root builds one backend per kind: Codex's (under
// its supervisor, which restarts the child) and one per configured ACP
// agent, and gives the domain the map of them by kind.
//
// # Adding a protocol
//
// A newcomer implements Backend in a package of its own, beside codexchild
// and acpbackend: a turn on a new thread calls TurnRequest.OnThread with
// the thread's id, the turn's events go to TurnRequest.Handler (with
// Event.Neutral set, or Event.Translate for a translation on demand), its
// approvals are NewApproval values answered through Respond, and a dead
// child is an *ExitError (errors.Is finds ErrChildExited). Then it offers
// the capabilities that are true of it, and only those: Configurable when
// its agents take settings of their own (with the names the tools give
// them, and Options to carry their values), Sandboxed when those settings
// choose a sandbox the read-only policy can hold, WholeRestarter when one
// child runs every thread, Named for its name in questions. The
// composition root (agentmcp's serve) registers it under its kind's name
// in the map it gives session.Config.Backends. Nothing in package session
// changes: a session of the new kind is created, continued, resumed,
// interrupted, closed, summarised and policed through this seam.
package backend
