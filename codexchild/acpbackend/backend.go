package acpbackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/toolhttp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
)

// Protocol is the protocol of the ACP backend (backend.Status.Protocol).
const Protocol = "acp"

// The resume policies of Config.Resume.
const (
	// ResumeAuto reopens a thread the backend has no live agent for with
	// session/load when the agent advertises it, else session/resume;
	// when neither is offered or both fail, a new session is started,
	// seeded (TurnRequest.Seed).
	ResumeAuto = "auto"
	// ResumeLoad reopens with session/load only, else seeds a new session.
	ResumeLoad = "load"
	// ResumeResume reopens with session/resume only, else seeds a new
	// session.
	ResumeResume = "resume"
	// ResumeNone always starts a new session, seeded.
	ResumeNone = "none"
)

// Config configures an ACP backend (New). Only Command is required.
type Config struct {
	// Name is the agent kind ("claude", "gemini", "opencode", or a
	// configured name); it is logged. optional.
	Name string
	// Command is the agent's program (claude-agent-acp, gemini, …).
	// Required.
	Command string
	// Args are its arguments (["--acp"] for gemini). optional.
	Args []string
	// Env is added to the proxy's environment (an entry for a variable that
	// is set replaces it): the agent's profile (IS_SANDBOX=1 for
	// claude-agent-acp as root, GEMINI_CLI_TRUST_WORKSPACE=true, …).
	// optional.
	Env []string
	// Dir is the agent process's working directory, and the session's cwd
	// when ThreadParams.Cwd is empty. optional: "" means the proxy's (with
	// Host: the home directory there).
	Dir string
	// Host is the host the agents run on, over its ssh connection
	// (acp.Config.Host: one session of the host per agent process, named
	// after Name): Command is a program there, Dir and the sessions' cwd
	// are directories there, and the tool servers are served over HTTP
	// whatever ToolTransport says (ToolsHTTP, on a port of the host's
	// loopback forwarded to this machine's), so that they run here, where
	// the team's mail is. optional: nil runs the agents here.
	Host *sshhost.Host
	// Mode is set (session/set_mode) on every session the backend opens or
	// reopens, so that the agent asks for permission rather than deciding
	// by itself ("default" for claude-agent-acp, whose own "auto" decides).
	// A mode the agent does not offer fails the turn. optional: "" leaves
	// the agent's own.
	Mode string
	// ConfigOptions are set (session/set_config_option) on every session
	// the backend opens or reopens, in order, after Mode. optional.
	ConfigOptions []acp.ConfigOption
	// Resume is the policy for a thread the backend has no live agent for
	// (the proxy restarted, the agent died or was stopped after an
	// interrupt): ResumeAuto, ResumeLoad, ResumeResume or ResumeNone.
	// optional: "" means ResumeAuto.
	Resume string
	// ReuseAfterCancel keeps an agent's process after an interrupted turn.
	// optional: false stops it once the turn has ended, and the thread's
	// next turn reopens the session in a new process (per Resume):
	// claude-agent-acp 0.101.0 answers a cancel at once but lets the
	// interrupted model request run on, and its answer would become the
	// next turn's result (acp.TurnResult.AfterCancel).
	ReuseAfterCancel bool
	// ToolTransport is how the thread's tool servers reach the agent:
	// ToolsStdio (stdio MCP servers the agent starts) or ToolsHTTP (served
	// by the backend on a loopback HTTP endpoint, for agents that refuse
	// stdio servers). optional: "" means ToolsStdio, or ToolsHTTP with a
	// Host.
	ToolTransport string
	// Guard is the command that runs package guard's Main, as for the Codex
	// backends (Config.Guard): every agent is started through it, so that
	// nothing of it outlives the proxy. optional: nil starts agents
	// directly.
	Guard []string
	// InitTimeout, CallTimeout, CancelTimeout and StopGrace are passed to
	// acp.Config (each optional: 0 means acp's default). TurnTimeout bounds
	// a turn whose TurnRequest.Timeout is 0. optional: 0 means
	// DefaultTimeout (300 s); negative means none.
	InitTimeout, CallTimeout, CancelTimeout, StopGrace time.Duration
	TurnTimeout                                        time.Duration
	// Logger receives the backend's logs and the agents' stderr. optional:
	// nil discards.
	Logger *slog.Logger
}

func (c *Config) resume() string {
	if c.Resume == "" {
		return ResumeAuto
	}
	return c.Resume
}

func (c *Config) turnTimeout(d time.Duration) time.Duration {
	if d == 0 {
		d = c.TurnTimeout
	}
	if d == 0 {
		d = acp.DefaultTurnTimeout
	}
	return d
}

// Backend runs coding agents that speak the Agent Client Protocol (ACP
// v1) behind the Backend interface: one agent process and one ACP session
// per thread (a team member), the ACP session id being the thread id. See
// New.
//
// Design notes: b.mu guards the thread table and the counters; a thread's
// own mu guards its running turn, and the turn's handler is called with it
// held (from the agent client's event goroutine and from approval
// goroutines), so that a Handler sees one call at a time and nothing after
// its Turn has returned. A thread is busy (one Turn at a time) from the
// moment a Turn picks it until that Turn returns; while busy, only that
// Turn starts, reopens or replaces its agent.
type Backend struct {
	cfg      Config
	log      *slog.Logger
	toolHTTP *toolhttp.Server // the tool servers over http (ToolsHTTP), or nil

	mu      sync.Mutex
	threads map[string]*acpThread // by session id
	closed  bool
	started bool
	lastPID int
	version string
	exit    *backend.ExitStatus // how the last agent that died died

	approvals atomic.Int64
	// stopping are the goroutines Close waits for: agents stopped in the
	// background (retire) and interrupts after an aborted approval
	// (background). Added to under mu while not closed.
	stopping sync.WaitGroup
}

var _ backend.Backend = (*Backend)(nil)

// New returns a backend that runs cfg's agent over ACP. No process is
// started until the first turn.
//
// A turn with an empty ThreadID starts the agent (initialize), opens a
// session (session/new with the thread's cwd and ToolServers as stdio MCP
// servers), sets Mode and ConfigOptions, and the thread's model through
// the config option "model" when the agent offers one (else the model is
// ignored: it is the agent's own business); Options and WritableRoots are
// ignored (the agent runs with the rights of serve: nothing to open). ACP
// has no instructions parameter, so the first prompt is the thread's
// instructions (BaseInstructions, then DeveloperInstructions, each followed
// by a blank line) followed by Prompt; later turns send Preamble+Prompt.
//
// A turn on a thread the backend has no live agent for (a new backend
// after a restart; an agent that died or was stopped) starts the agent and
// reopens the session per Config.Resume (the history session/load replays
// is swallowed) and sends Preamble+Prompt; when it cannot, it opens a new
// session whose first prompt carries the instructions with Seed in front of
// the developer instructions, Result.ThreadID names that new session and
// Result.Replaced says why.
//
// TurnRequest's hooks: Release is called first; OnSent once the prompt is
// written; OnAccepted (ACP has no separate acknowledgement) on the first
// update of the turn's own output (a message, thought, tool call, plan,
// usage or permission request), or when the agent answers the prompt,
// whichever comes first. OnResult is not used.
func New(cfg Config) *Backend {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Command
	}
	b := &Backend{cfg: cfg, log: log.With("backend", "acp", "agent", name), threads: make(map[string]*acpThread)}
	if cfg.ToolTransport == ToolsHTTP || cfg.Host != nil {
		b.toolHTTP = toolhttp.New(toolhttp.Config{Host: cfg.Host, Logger: b.log})
	}
	return b
}

// Turn runs one turn on the thread's agent; see New and Backend.Turn.
func (b *Backend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	if req.Release != nil {
		req.Release()
	}
	if len(req.OutputSchema) != 0 {
		// An ACP agent's prompt has no field for a schema: refused before
		// anything is sent (backend.StructuredOutputter).
		return nil, fmt.Errorf("acp: an ACP agent cannot constrain a turn's answer to an output schema: %w", backend.ErrUnsupported)
	}
	th, err := b.acquire(req.ThreadID)
	if err != nil {
		return nil, err
	}
	defer b.release(th)
	text, replaced, err := th.ready(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := th.run(ctx, req, th.takeNotes()+text)
	if res != nil {
		res.Replaced = replaced
	}
	return res, err
}

// acquire returns the thread a turn runs on, marked busy: the live or dead
// thread of id, or a new one (not yet in the table) for "" and for an id
// the backend does not know.
func (b *Backend) acquire(id string) (*acpThread, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, backend.ErrClosed
	}
	if id != "" {
		if th := b.threads[id]; th != nil {
			if th.busy {
				return nil, fmt.Errorf("thread %s: %w", id, backend.ErrThreadBusy)
			}
			th.busy = true
			return th, nil
		}
	}
	th := &acpThread{b: b, id: id, busy: true}
	if id != "" {
		b.threads[id] = th // a concurrent turn on id finds it busy
	}
	return th, nil
}

// release ends a turn's hold on its thread; a thread that never got a
// session is forgotten.
func (b *Backend) release(th *acpThread) {
	b.mu.Lock()
	defer b.mu.Unlock()
	th.busy = false
	if th.id == "" || (th.sess == nil && th.client == nil) {
		if th.id != "" && b.threads[th.id] == th {
			delete(b.threads, th.id)
		}
	}
}

// rekey records that th's session is now id (a new session in place of
// the one the turn asked for).
func (b *Backend) rekey(th *acpThread, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backend.ErrClosed
	}
	if th.id != "" && b.threads[th.id] == th {
		delete(b.threads, th.id)
	}
	th.id = id
	b.threads[id] = th
	return nil
}

// Interrupt cancels the running turn of a thread (session/cancel; the
// agent's process group is killed when the turn has not ended within
// CancelTimeout). The pending Turn returns the interrupted Result. It is a
// no-op when the thread has no running turn.
func (b *Backend) Interrupt(ctx context.Context, threadID string) error {
	b.mu.Lock()
	th := b.threads[threadID]
	b.mu.Unlock()
	if th == nil {
		return nil
	}
	return th.interrupt(ctx)
}

// Status reports KindACP; Started once any agent was started, Running
// while any agent process lives (PID and Version are of the last one
// started); Exit only when every agent has exited, saying how the last
// one that died died.
func (b *Backend) Status() backend.Status {
	b.mu.Lock()
	threads := make([]*acpThread, 0, len(b.threads))
	for _, th := range b.threads {
		threads = append(threads, th)
	}
	st := backend.Status{Protocol: Protocol, Started: b.started, PID: b.lastPID, Version: b.version}
	exit := b.exit
	b.mu.Unlock()
	for _, th := range threads {
		if c := th.liveClient(); c != nil {
			st.Running = true
		}
	}
	if st.Started && !st.Running && exit != nil {
		e := *exit
		st.Exit = &e
	}
	return st
}

// Close stops every agent (session/close where offered, stdin closed,
// SIGTERM and SIGKILL to each process group); pending turns fail with an
// *ExitError, later ones with ErrClosed. The tool servers served over http
// (ToolsHTTP) are stopped after the agents.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	var clients []*acp.Client
	for _, th := range b.threads {
		if c := th.takeClient(); c != nil {
			clients = append(clients, c)
		}
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() { errs[i] = c.Close(ctx) })
	}
	wg.Wait()
	b.stopping.Wait()
	if b.toolHTTP != nil {
		b.toolHTTP.Close(ctx)
	}
	return errors.Join(errs...)
}

// background runs f on a goroutine that Close waits for; once Close has
// begun it runs nothing (Close stops every agent anyway) and reports
// false.
func (b *Backend) background(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.stopping.Go(f)
	return true
}

// started records a started agent.
func (b *Backend) noteStarted(c *acp.Client) {
	st := c.Status()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = true
	b.lastPID = st.PID
	b.version = st.Agent.Version
}

// noteExit records how an agent died.
func (b *Backend) noteExit(s *acp.ExitStatus) {
	if s == nil {
		return
	}
	e := backend.ExitStatus(*s)
	b.mu.Lock()
	b.exit = &e
	b.mu.Unlock()
}

func (b *Backend) nextApproval() string {
	return "approval-" + strconv.FormatInt(b.approvals.Add(1), 10)
}

// acpExitError converts acp's *ExitError.
func acpExitError(ee *acp.ExitError) *backend.ExitError {
	return &backend.ExitError{Child: ee.Child, Status: backend.ExitStatus(ee.Status), Stderr: ee.Stderr, Reason: ee.Reason, Cause: ee.Cause}
}
