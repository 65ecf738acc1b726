package codexchild

import (
	"log/slog"
	"os"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds a turn or a forwarded request (FR-14).
	DefaultTimeout = 300 * time.Second
	// DefaultStopGrace is each of the two waits of a graceful stop.
	DefaultStopGrace = 2 * time.Second
	// DefaultClientName is the clientInfo name of the handshake.
	DefaultClientName = "atm-agent-mcp"
	// DefaultHandshakeTimeout bounds the start-up handshake (initialize,
	// freshly started child.
	DefaultHandshakeTimeout = 60 * time.Second
	// DefaultSubAgentWait bounds how long a turn waits, once it has ended
	// in Codex, for the sub-agents its agent started (subagents.go).
	DefaultSubAgentWait = 300 * time.Second
)

// ClientInfo is what the backend tells Codex about itself in the handshake.
type ClientInfo struct {
	Name    string
	Version string
}

// Config configures a backend. Only Bin is required.
type Config struct {
	// Bin is the path of the codex binary. Required.
	Bin string
	// Kind selects the protocol for New: KindMCPServer, KindAppServer or
	// KindAuto (probe the binary at first use, see New). optional: ""
	// means KindAuto. NewMCPServer and NewAppServer ignore it.
	Kind Kind
	// Args are extra arguments placed before the subcommand, such as
	// ["-c", "model=o3"] or ["-m", "o3"]. optional: nil means none.
	Args []string
	// Env is added to the proxy's own environment (os.Environ()); an entry
	// for a variable that is already set replaces it. optional: nil means the
	// proxy's environment as is.
	Env []string
	// ReplaceEnv makes Env the child's whole environment instead of an
	// addition. optional: false adds.
	ReplaceEnv bool
	// Dir is the child's working directory. optional: "" means the proxy's,
	// or with Host the home directory there.
	Dir string
	// Host is the host Codex runs on, over its ssh connection
	// (sshhost.Host.Launcher, sessions named "codex-<n>"): Bin is a program
	// there, Dir and the threads' cwd are directories there, only Env
	// crosses (in the wrapper's stdin), never this machine's environment,
	// and the Guard stays here, around ssh. On a host Codex runs as
	// app-server only (New refuses another Kind: the probe of the auto
	// selection runs here), and the threads' tool servers run here, served
	// over HTTP on a port of the host's loopback forwarded to this
	// machine's (toolhttp): each becomes an mcp_servers entry by url with
	// its bearer token in http_headers. optional: nil runs Codex here.
	Host *sshhost.Host
	// Guard is the command that runs package guard's Main (for example
	// [os.Executable(), "codex-guard"]): the child is started through it,
	// so that nothing of Codex outlives the proxy however the proxy dies
	// (see package guard). optional: nil starts the child directly, and a
	// proxy killed with SIGKILL leaves Codex running.
	Guard []string
	// ClientInfo names the proxy in the handshake. optional: an empty Name
	// means DefaultClientName, an empty Version means "dev".
	ClientInfo ClientInfo
	// DefaultTimeout bounds a turn whose TurnRequest.Timeout is 0, and every
	// forwarded request. optional: 0 means DefaultTimeout (300 s); negative
	// means no timeout.
	DefaultTimeout time.Duration
	// HandshakeTimeout bounds the child's start-up handshake (initialize,
	// and tools/list on mcp-server): a child that does not answer in time
	// is stopped and every call fails with ErrHandshake. optional: 0 means
	// DefaultHandshakeTimeout (60 s), or DefaultTimeout when that is
	// shorter, so that the first call fails within a turn's timeout.
	HandshakeTimeout time.Duration
	// StopGrace is how long Close waits after closing the child's stdin
	// before SIGTERM, and again before SIGKILL. optional: 0 means
	// DefaultStopGrace (2 s).
	StopGrace time.Duration
	// Logger receives the backend's logs and the child's stderr, line by
	// line. optional: nil discards.
	Logger *slog.Logger
	// OnEvent receives the notifications that belong to no running turn: the
	// events of a request sent with Forward, of a turn that already ended,
	// and any other notification of the child. It is called from the
	// reader goroutine and must not block. optional: nil drops them (with a
	// debug log line).
	OnEvent func(backend.Event)
	// SubAgentWait bounds how long a turn whose agent started sub-agents
	// of its own (Codex's collab spawn_agent) waits for them after the
	// turn itself has ended in Codex, before Turn returns: the turn is
	// done when they have finished or been closed, or when this wait has
	// passed (Result.SubAgentsNote says so). optional: 0 means
	// DefaultSubAgentWait (300 s); negative means no wait.
	SubAgentWait time.Duration
	// OnExit is called once when the child has exited, after every pending
	// call has failed, from a goroutine of the backend. It must not call
	// Close. optional: nil means nobody is told (Status still reports it).
	OnExit func(backend.ExitStatus)
}

func (c Config) subAgentWait() time.Duration {
	if c.SubAgentWait == 0 {
		return DefaultSubAgentWait
	}
	return max(c.SubAgentWait, 0)
}

func (c Config) timeout() time.Duration {
	if c.DefaultTimeout == 0 {
		return DefaultTimeout
	}
	return c.DefaultTimeout
}

func (c Config) handshakeTimeout() time.Duration {
	if c.HandshakeTimeout > 0 {
		return c.HandshakeTimeout
	}
	if t := c.effectiveTimeout(0); t > 0 && t < DefaultHandshakeTimeout {
		return t
	}
	return DefaultHandshakeTimeout
}

func (c Config) grace() time.Duration {
	if c.StopGrace <= 0 {
		return DefaultStopGrace
	}
	return c.StopGrace
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c Config) clientInfo() ClientInfo {
	ci := c.ClientInfo
	if ci.Name == "" {
		ci.Name = DefaultClientName
	}
	if ci.Version == "" {
		ci.Version = "dev"
	}
	return ci
}

func (c Config) env() []string {
	if c.ReplaceEnv {
		return c.Env
	}
	// exec.Cmd keeps the last value of a duplicated variable.
	return append(os.Environ(), c.Env...)
}

// effectiveTimeout turns a per-call timeout (0 = the config's default,
// negative = none) into a duration; 0 means none.
func (c Config) effectiveTimeout(d time.Duration) time.Duration {
	if d == 0 {
		d = c.timeout()
	}
	if d < 0 {
		return 0
	}
	return d
}
