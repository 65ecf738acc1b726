package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Backend runs the agents of one kind at the level the proxy thinks in:
// threads, turns, events, approvals. The Codex backends (package
// codexchild: codex mcp-server, Codex ≤ 0.153.4, and codex app-server,
// Codex ≥ 0.154) and the ACP backend (package acpbackend: one agent
// process per thread) implement it; what only some have is an optional
// interface (capabilities.go), asked of the backend. A Backend starts its
// child lazily on the first call that needs it; every method is safe for
// concurrent use, and turns on different threads run concurrently.
type Backend interface {
	// Turn runs one turn: a new thread when req.ThreadID is empty, else a
	// continuation of that thread (see TurnRequest for when a backend
	// continues it on a fresh thread or resumes it first). It blocks until the turn ends, the turn's
	// timeout expires (a *TimeoutError), ctx is cancelled (the turn is
	// interrupted in the agent first, and Turn returns the interrupted
	// Result together with ctx's error) or the child dies (an *ExitError).
	// Events and approvals of the turn are delivered to req.Handler while
	// it runs. An agent-side failure of the turn (unknown thread, model
	// error, aborted turn) is a Result with IsError set, not an error.
	Turn(ctx context.Context, req TurnRequest) (*Result, error)

	// Interrupt interrupts the running turn of a thread; the pending Turn
	// call returns at once with a Result with Status "interrupted" and
	// IsError set. It is a no-op when the thread has no running turn (or the
	// running turn's thread id is not known yet; cancel the Turn's ctx then).
	Interrupt(ctx context.Context, threadID string) error

	// Status reports the protocol, whether the child is running and, once
	// it has exited, how it died. It never blocks.
	Status() Status

	// Close stops the child gracefully (close stdin, SIGTERM after a grace,
	// SIGKILL after a second grace); pending turns fail with an *ExitError.
	Close(ctx context.Context) error
}

// TurnRequest is one turn.
//
// A turn on a thread this child process has never run continues it where
// the agent can: Codex app-server resumes it from Codex's storage
// (thread/resume with Params) first, an ACP agent reopens its session
// (session/load or session/resume); Codex mcp-server, which cannot,
// starts a fresh thread in its place, seeded with Seed. On mcp-server a
// thread whose last turn was interrupted is also left for a fresh thread
// (Codex may still deliver that turn's results under a later request:
// docs/codex-wire.md#stale-listener), seeded with the agent's last
// messages there, unless SameThread is set. The Result's ThreadID names
// the thread the turn ran on.
type TurnRequest struct {
	// ThreadID continues an existing thread; "" starts a new one.
	ThreadID string
	// Prompt is the user input of the turn.
	Prompt string
	// Preamble is sent in front of Prompt, verbatim (no separator added),
	// on a turn that continues a thread; a turn that starts one sends
	// Prompt alone (its context belongs in Params.DeveloperInstructions).
	// optional.
	Preamble string
	// Params are the thread's parameters, given on every turn: they start
	// a thread (a new one, or a fresh one in place of ThreadID) and go with
	// a resume (app-server's thread/resume, an ACP session/load).
	Params ThreadParams
	// Seed is put in front of the developer instructions (followed by a
	// blank line) when the backend starts a fresh thread in place of a
	// ThreadID it cannot continue (Result.Replaced says why): mcp-server
	// for a thread this child never ran, app-server when Codex refuses to
	// resume it, an ACP agent that cannot reopen the session. Such as the
	// last messages of an adopted Codex session, or a resumed session's
	// summary. optional.
	Seed string
	// SameThread sends the turn to ThreadID as it is: no fresh thread in
	// its place and no resume first (a session's summary must come from its
	// own thread; a reply to a thread no session knows goes to the agent as
	// given).
	SameThread bool
	// Timeout bounds the turn. optional: 0 means 300 s; negative means none.
	Timeout time.Duration
	// Handler receives the turn's events and approvals. optional: nil drops
	// events and denies approvals.
	Handler Handler
	// OnThread is called with the id of a new thread the turn runs on (one
	// it starts, or one in place of a ThreadID the backend cannot
	// continue) as soon as the backend knows it, before the turn ends:
	// app-server's thread/start answer, mcp-server's first event of the
	// turn that names its thread, an ACP agent's session/new answer. A
	// caller records it at once, so that a process killed during a long
	// first turn leaves a thread to resume. It is not called for a turn
	// that runs on ThreadID. It may run on the backend's reader goroutine
	// and must not block; it is called at most once, and never after Turn
	// has returned. optional.
	OnThread func(threadID string)
	// OnSent is called once the request that starts the turn has been
	// written to the child's stdin and recorded as pending, before the
	// turn's events arrive (the mail layer marks mail read then, FR-8.12).
	// It is not called when the write fails. optional.
	OnSent func()
	// OnAccepted is called once the child has acknowledged the turn,
	// proof that it read the request: app-server's response to turn/start
	// (its turn id, or a refusal; not the "thread not found" that makes
	// Turn resume the thread and send turn/start again, whose own response
	// counts); mcp-server's first codex/event under the turn's request id,
	// or the tools/call response when no event came first. A child that
	// dies, is closed or fails the write before that never calls it (a
	// request written to a pipe may still be unread, or read and lost,
	// when the child dies). A turn abandoned before its acknowledgement
	// (an interrupt, ctx, its timeout) waits for it, at most 2 s, before
	// Turn returns: OnAccepted is called if it comes, and Turn fails with
	// the *ExitError if the child dies first; after that Turn returns as
	// usual, unacknowledged. The mail layer marks mail read here, not at
	// OnSent, so that mail a dying child never took is offered again
	// (FR-8.12). It is called at most once, on the backend's reader
	// goroutine, and never after Turn has returned; it may run before
	// OnSent does (the reader does not wait for the writer) and it must
	// not block. Without it, nothing waits. optional.
	OnAccepted func()
	// Release, when set, is called once, on the goroutine calling Turn,
	// before Turn first waits for anything: the child's start, room in its
	// stdin, or (at the latest, once the request is written and before
	// OnSent) the turn's result. A caller that starts a turn where it must
	// not wait, such as the goroutine reading its own client, gives that
	// role to another goroutine there and keeps the turn; the turn's
	// request then reaches the child without a hand-off between goroutines.
	// It is called even when Turn fails before it would wait. optional;
	// the app-server backend calls it before anything else.
	Release func()
	// OnResult is an optimisation hook. When set, it is called with the
	// result the child sent for the turn (an IsError one included) on the
	// backend's reader goroutine as soon as it arrives, before Turn returns
	// that same result: a caller can answer its own client at once,
	// without waiting for the goroutine blocked in Turn to be scheduled. It
	// must not block (the child's output waits meanwhile). It is not called for
	// a turn that ends otherwise (timeout, interrupt, the child's death, a
	// JSON-RPC error). optional; the mcp-server backend calls it, app-server
	// does not.
	OnResult func(*Result)
	// OutputSchema is a JSON Schema the turn's final message must follow
	// (structured output): a backend that is a StructuredOutputter passes
	// it to the agent's model (structured.go); the others refuse the turn
	// with ErrUnsupported. The backend does not check the answer: the
	// caller does (package backend/outputschema). optional.
	OutputSchema json.RawMessage
}

// ThreadParams are the parameters of a thread (a session, in an agent's
// terms), named as the codex tool's arguments. The fields mean the same
// to every backend; what only one kind understands (Codex's sandbox,
// approval policy, config overrides) is in Options, opaque to the caller:
// the kind's backend made it (Configurable.Options) and reads it, and
// every other backend ignores it. Empty fields are not sent.
type ThreadParams struct {
	Cwd                   string
	Model                 string
	BaseInstructions      string
	DeveloperInstructions string
	// ToolServers are stdio MCP servers the thread's agent gets besides its
	// own tools (the per-agent team-mail server). The Codex backends send
	// them as config mcp_servers entries (tools approved, server
	// required); an ACP backend passes them to session/new.
	ToolServers []ToolServer
	// Env are environment variables the agent's commands see (a session's
	// ATM_WORKTREE, ATM_BRANCH, ATM_PORT_BASE, ATM_PORT_COUNT): the Codex
	// backends set them in the thread's shell environment (config
	// shell_environment_policy.set); an ACP backend starts the thread's
	// agent process with them (one process per thread). optional.
	Env map[string]string
	// WritableRoots are directories besides the thread's cwd that its
	// commands must be able to write (what git needs to commit in a
	// worktree). A backend that holds its agents in a sandbox lets them
	// through it (Codex's workspace-write sandbox:
	// sandbox_workspace_write.writable_roots), never for a read-only
	// thread; a backend without a sandbox needs nothing. The caller gives
	// none to a thread it holds read-only. optional.
	WritableRoots []string
	// Options are the settings only the thread's own kind understands, as
	// its backend made them from the session's settings
	// (Configurable.Options); a backend that finds anything else here
	// (nil, another kind's) sends none of its own. optional.
	Options any
}

// ToolServer is a stdio MCP server given to a thread's agent.
type ToolServer struct {
	// Name is the server's name as the agent shows it ("atm").
	Name    string
	Command string
	Args    []string
	Env     map[string]string
}

// Handler receives a turn's events and approvals. Its methods are called
// from the backend's reader goroutine: they must not block.
type Handler interface {
	// Event delivers one event of the turn.
	Event(Event)
	// Approval delivers an approval request. The handler must eventually
	// call a.Respond, from any goroutine; until then the turn waits.
	Approval(a *Approval)
}

// A Flusher is a [Handler] that passes a turn's events on in batches, say
// one write to its own client for several events. The backend calls Flush
// on its reader goroutine once it has delivered everything the child has
// written so far, before it waits for more of the child's output, and when
// that output ends: an event is never held back while the reader has
// nothing else to do. Every Flusher that has had an event since the
// reader's last wait gets one call; it may come after the turn's Turn call
// has returned. Like the other Handler methods, Flush must not block.
type Flusher interface {
	Flush()
}

// Event is one event of an agent, in its protocol's own words.
type Event struct {
	// ThreadID and TurnID associate the event; either may be "" when the
	// agent did not say.
	ThreadID string
	TurnID   string
	// Method is the notification method: "codex/event" on Codex
	// mcp-server, the app-server method (e.g. "item/completed"),
	// "session/update" for an ACP agent.
	Method string
	// Type is msg.type on mcp-server, the method on app-server, the
	// update's kind on ACP.
	Type string
	// Params are the notification params exactly as the child sent them.
	Params json.RawMessage
	// Neutral is the event in backend-neutral terms, set by a backend that
	// translates as it reads (ACP); nil lets [Event.Activity] translate it
	// on demand with Translate.
	Neutral *Activity
	// Translate translates the event on demand when Neutral is nil: set by
	// a backend that translates only what somebody reads (Codex, whose
	// deltas would cost a decode each). optional: nil (and no Neutral)
	// means the event says nothing in neutral terms.
	Translate func(Event) Activity
	// RequestID is, for an event of a request sent with Forward (delivered to
	// Config.OnEvent), that request's id as the caller sent it; the child's
	// params still carry the backend's own id. Zero otherwise.
	RequestID jsonrpcframe.ID
}

// ApprovalKind tells command and patch approvals apart.
type ApprovalKind string

// The approval kinds.
const (
	ApprovalExec  ApprovalKind = "exec"
	ApprovalPatch ApprovalKind = "patch"
	// ApprovalTool: another agent's use of a tool that is neither a
	// command nor a file change (an ACP tool call of kind fetch, other,
	// …); Message names the tool or what it does.
	ApprovalTool ApprovalKind = "tool"
)

// Approval is a typed approval request from an agent.
type Approval struct {
	// ID is the backend's own name for the approval, unique for the
	// backend's life ("approval-1", ...). The child's request ids (from 0)
	// never leave the backend.
	ID       string
	Kind     ApprovalKind
	ThreadID string
	TurnID   string
	CallID   string
	// Message is the agent's own question (or, for an ACP tool call, its
	// title), when it sent one.
	Message string
	// Command is the command line of an exec approval.
	Command string
	Cwd     string
	Reason  string
	// Changes are the file changes of a patch approval, as the agent sent
	// them.
	Changes json.RawMessage
	// Raw are the request params exactly as the child sent them.
	Raw json.RawMessage

	respond func(Decision) error
}

// Respond answers the approval. Only the first answer counts; later calls
// return ErrAlreadyAnswered. The answer always reaches the agent as a
// decision it understands, never as a JSON-RPC error.
func (a *Approval) Respond(d Decision) error {
	if a.respond == nil {
		return errors.New("backend: approval has no responder")
	}
	return a.respond(d)
}

// NewApproval returns an approval whose Respond calls respond. Backends and
// tests use it.
func NewApproval(a Approval, respond func(Decision) error) *Approval {
	a.respond = respond
	return &a
}

// DecisionKind is the answer to an approval.
type DecisionKind string

// The decisions.
const (
	Approve           DecisionKind = "approve"
	ApproveForSession DecisionKind = "approve_for_session"
	Deny              DecisionKind = "deny"
	// Abort ends the turn (mcp-server "abort", app-server "cancel", an ACP
	// agent's cancelled permission and session/cancel).
	Abort DecisionKind = "abort"
)

// Decision answers an approval; Reason is shown to the model on Deny (as
// the rejection where the protocol has one, else as a note: see
// denialnote.go).
type Decision struct {
	Kind   DecisionKind
	Reason string
	// TurnEnds says the denial comes with the end of the turn (the session
	// closes, the turn is interrupted, the proxy shuts down): nobody needs
	// to be told more, so no note follows it.
	TurnEnds bool
}

// Result is how a turn ended.
type Result struct {
	ThreadID string
	TurnID   string
	// Text is the final agent message (or the agent's error text when
	// IsError).
	Text string
	// IsError reports an agent-side failure (the tool result's isError, a
	// failed or interrupted turn).
	IsError bool
	// Status is "completed", "failed" or "interrupted".
	Status string
	// Partial is the agent text seen in events before an interrupted turn
	// ended; "" otherwise.
	Partial string
	// Raw is the child's tools/call result verbatim (mcp-server), the
	// turn/completed params (app-server), or the prompt answer (ACP).
	Raw json.RawMessage
	// Replaced says why the turn ran on a new thread (ThreadID) in place
	// of the TurnRequest's ThreadID, which the child could not continue:
	// "codex mcp-server cannot load a thread another process ran", "Codex
	// could not resume it: no rollout found for thread id …", "the agent
	// could not reopen it: …". The new thread was given TurnRequest.Seed.
	// "" when the turn ran on the thread asked for, or started one.
	Replaced string
	// SubAgents are the agents the turn's agent started of its own
	// (Codex's collab spawn_agent, and theirs), with their states when
	// Turn returned (Codex app-server: codexchild/appsubagents.go). nil
	// when it started none.
	SubAgents []SubAgent
	// SubAgentsNote says why the Result came while some of them still
	// ran: "1 of 2 sub-agents still running after waiting 5m0s for them".
	// "" when every one had finished or been closed.
	SubAgentsNote string
}

// Status reports the child's state.
type Status struct {
	// Protocol is the protocol the backend speaks ("mcp-server",
	// "app-server", "acp"); "auto" while Codex's auto backend has not
	// decided.
	Protocol string
	Started  bool
	Running  bool
	PID      int
	Version  string // the agent's version from the handshake
	Exit     *ExitStatus
}

// ExitStatus says how the child died (it has the shape of
// codexchild/acp's ExitStatus, so each converts to the other).
type ExitStatus struct {
	Code   int    // exit code, -1 when killed by a signal
	Signal string // signal name ("killed", "terminated"), "" when it exited
	// Reason says why the backend killed the child ("it wrote 10412 lines
	// in a row that are not JSON-RPC on stdout, and 10000 is the limit"); ""
	// when it did not.
	Reason string
}

// String says how the child died, leading with why when the backend
// killed it: "exited with code 3", "stopped: it wrote 10412 lines in a row
// that are not JSON-RPC on stdout, and 10000 is the limit (killed by signal
// killed)".
func (s ExitStatus) String() string { return childproc.ExitStatus(s).String() }

// Errors, one set for every backend.
var (
	// ErrChildExited is wrapped by *ExitError: the child process (Codex,
	// or an ACP agent) is not running. It is acp.ErrAgentExited too.
	ErrChildExited = childproc.ErrExited
	// ErrNotJSONRPC is the Cause of an *ExitError when the backend killed
	// the child because it wrote lines in a row on stdout that are not
	// JSON-RPC (10000; the message says how many). It is
	// acp.ErrNotJSONRPC too.
	ErrNotJSONRPC = childproc.ErrNotJSONRPC
	// ErrStdinBlocked is the Cause of an *ExitError when the backend
	// killed the child because a write to its stdin could not finish in
	// time. It is acp.ErrStdinBlocked too.
	ErrStdinBlocked = childproc.ErrStdinBlocked
	// ErrTimeout is wrapped by *TimeoutError.
	ErrTimeout = errors.New("agent request timed out")
	// ErrHandshake: the child did not complete its start-up handshake
	// (no answer within Config.HandshakeTimeout, or a refusal); it was
	// stopped.
	ErrHandshake = errors.New("handshake failed")
	// ErrUnsupported: the backend kind does not support the operation.
	ErrUnsupported = errors.New("not supported by this backend")
	// ErrAlreadyAnswered: an approval was answered twice.
	ErrAlreadyAnswered = errors.New("approval already answered")
	// ErrThreadBusy: a turn was started on a thread whose previous turn is
	// still running.
	ErrThreadBusy = errors.New("thread already has a running turn")
	// ErrClosed: the backend was closed before its child was started.
	ErrClosed = errors.New("backend closed")
)

// ExitError reports a call that failed because the child died, with how it
// died.
type ExitError struct {
	// Child is how the message calls the child: "codex child", or the
	// agent kind and "agent" ("claude agent") for an ACP agent. optional:
	// "" means "child".
	Child  string
	Status ExitStatus
	Stderr string // the last lines the child wrote to stderr
	// Reason says why the backend killed the child, when it did (a child
	// that writes only garbage on stdout); "" when the child died by
	// itself. It is Status.Reason.
	Reason string
	// Cause is why the backend killed the child (its text is Reason): it
	// wraps ErrNotJSONRPC, ErrStdinBlocked, or what the backend found
	// (acp.ErrCancelIgnored, ErrHandshake); nil when it did not kill it.
	Cause error
	// NotFound is set when the child exited with code 127 before its
	// handshake: its program could not be run (notfound.go). nil
	// otherwise.
	NotFound *NotFoundError
}

// Error says which child died and how: "codex child process stopped: it
// wrote 10412 lines in a row that are not JSON-RPC on stdout (the limit is
// 10000) (killed by signal killed)", "claude agent process exited with
// code 3".
func (e *ExitError) Error() string {
	child := e.Child
	if child == "" {
		child = "child"
	}
	status := e.Status
	if status.Reason == "" {
		status.Reason = e.Reason
	}
	msg := child + " process " + status.String()
	if e.NotFound != nil {
		msg += ": " + e.NotFound.Error()
	}
	return msg
}

// Unwrap returns ErrChildExited, the Cause and the *NotFoundError when
// they are set.
func (e *ExitError) Unwrap() []error {
	errs := []error{ErrChildExited}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	if e.NotFound != nil {
		errs = append(errs, e.NotFound)
	}
	return errs
}

// TimeoutError reports a turn that exceeded its timeout; Partial holds the
// agent text seen in events before it expired.
type TimeoutError struct {
	After    time.Duration
	ThreadID string
	Partial  string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("turn timed out after %s", e.After)
}

// Unwrap returns ErrTimeout.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }
