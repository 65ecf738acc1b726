package acp

import (
	"log/slog"
	"os"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultInitTimeout bounds initialize (and authenticate). Every agent
	// probed answered within 3 s of spawn.
	DefaultInitTimeout = 30 * time.Second
	// DefaultCallTimeout bounds session/new, load, resume, close,
	// set_mode and set_config_option (acpx saw session/new stall for over
	// 45 s and set 60 s).
	DefaultCallTimeout = 60 * time.Second
	// DefaultTurnTimeout bounds a turn (as codexchild.DefaultTimeout for Codex).
	DefaultTurnTimeout = 300 * time.Second
	// DefaultCancelTimeout is how long a turn may go on after session/cancel
	// before the agent's process group is killed.
	DefaultCancelTimeout = 10 * time.Second
	// DefaultStopGrace is each of the two waits of a graceful stop.
	DefaultStopGrace = 2 * time.Second
	// DefaultEventBuffer is how many events wait for Config.OnEvent before
	// newer ones are dropped.
	DefaultEventBuffer = 1024
	// DefaultClientName is the clientInfo name of initialize.
	DefaultClientName = "atm-agent-mcp"
)

// Config says how to start an agent and talk to it. Only Command is
// required.
type Config struct {
	// Command is the agent's program (claude-agent-acp, gemini, opencode,
	// …). Required.
	Command string
	// Name is the agent's kind ("claude", "gemini", or a configured name):
	// the log and errors call it "<Name> agent" ("claude agent process
	// exited with code 3"). optional: "" means Command.
	Name string
	// Args are its arguments (["--acp"] for gemini, ["acp"] for opencode).
	// optional.
	Args []string
	// Env is added to the proxy's environment (an entry for a variable
	// that is set replaces it): the agent's profile, such as IS_SANDBOX=1
	// for claude-agent-acp as root, GEMINI_CLI_NO_RELAUNCH=true,
	// ANTHROPIC_BASE_URL. optional.
	Env []string
	// ReplaceEnv makes Env the whole environment. optional: false adds.
	ReplaceEnv bool
	// Guard is the command that runs codexchild/guard's Main (for example
	// [os.Executable(), "codex-guard"], as serve starts Codex): the agent
	// is started through it, in its process group, so that nothing of the
	// agent outlives the proxy however the proxy dies (SIGKILL, a crash).
	// optional: nil starts the agent directly, and a proxy killed with
	// SIGKILL leaves it running.
	Guard []string
	// Dir is the process's working directory. optional: "" means the
	// proxy's. (A session's cwd is SessionParams.Cwd.)
	Dir string
	// ClientName and ClientVersion are the clientInfo of initialize.
	// optional: DefaultClientName and "dev".
	ClientName, ClientVersion string
	// AuthMethod is the id of the auth method to call authenticate with
	// after initialize; it must be one the agent advertised. optional: ""
	// skips authenticate (agents that take credentials from the
	// environment need none).
	AuthMethod string
	// Asker decides permission requests. optional: nil rejects every
	// request (reject_once).
	Asker Asker
	// OnEvent receives every event, in order, on a goroutine of the
	// client's (never the reader's): a slow OnEvent delays only later
	// events, and when EventBuffer events are waiting, newer ones are
	// dropped and counted (Status.DroppedEvents). optional.
	OnEvent func(Event)
	// OnIdle is called on OnEvent's goroutine after OnEvent whenever no
	// more events are waiting: a consumer that passes events on in batches
	// flushes there. optional.
	OnIdle func()
	// EventBuffer is the room for events waiting for OnEvent. optional: 0
	// means DefaultEventBuffer.
	EventBuffer int
	// InitTimeout bounds initialize and authenticate; an agent that does
	// not answer is killed and Start fails with ErrHandshake. optional: 0
	// means DefaultInitTimeout.
	InitTimeout time.Duration
	// CallTimeout bounds every other request but session/prompt.
	// optional: 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// TurnTimeout bounds a turn whose TurnRequest.Timeout is 0; a turn that
	// runs out is interrupted (session/cancel, then a kill after
	// CancelTimeout). optional: 0 means DefaultTurnTimeout; negative means
	// none.
	TurnTimeout time.Duration
	// CancelTimeout is how long Interrupt waits for the turn to end after
	// session/cancel before it kills the agent's process group. optional:
	// 0 means DefaultCancelTimeout.
	CancelTimeout time.Duration
	// StopGrace is how long Close waits after closing the agent's stdin
	// before SIGTERM to its process group, and again before SIGKILL.
	// optional: 0 means DefaultStopGrace.
	StopGrace time.Duration
	// Logger receives the client's logs and the agent's stderr, line by
	// line. optional: nil discards.
	Logger *slog.Logger
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (c *Config) initTimeout() time.Duration { return orDefault(c.InitTimeout, DefaultInitTimeout) }
func (c *Config) callTimeout() time.Duration { return orDefault(c.CallTimeout, DefaultCallTimeout) }
func (c *Config) turnTimeout() time.Duration { return orDefault(c.TurnTimeout, DefaultTurnTimeout) }
func (c *Config) cancelTimeout() time.Duration {
	return orDefault(c.CancelTimeout, DefaultCancelTimeout)
}
func (c *Config) stopGrace() time.Duration { return orDefault(c.StopGrace, DefaultStopGrace) }

// name is how the log and errors call the agent (childproc.Config.Name).
func (c *Config) name() string {
	if c.Name != "" {
		return c.Name + " agent"
	}
	return c.Command + " agent"
}

func (c *Config) eventBuffer() int {
	if c.EventBuffer <= 0 {
		return DefaultEventBuffer
	}
	return c.EventBuffer
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// env returns the process environment: Env over the proxy's own (or Env
// alone with ReplaceEnv).
func (c *Config) env() []string {
	if c.ReplaceEnv {
		return append([]string{}, c.Env...)
	}
	if len(c.Env) == 0 {
		return nil // exec: the proxy's environment
	}
	set := make(map[string]bool, len(c.Env))
	for _, kv := range c.Env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, c.Env...)
}
