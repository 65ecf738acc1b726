package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/stdio"
)

// Server is an MCP server the command line runs with the resolved
// configuration, on stdin/stdout, until stdin ends or ctx is cancelled
// (SIGINT or SIGTERM: graceful shutdown, FR-7; see notifyShutdown). logger writes to stderr or
// the log file; stdout carries JSON-RPC and nothing else.
type Server func(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error

// Programs are the MCP servers of the command line.
type Programs struct {
	// Serve runs the MCP proxy (serve). optional: nil makes serve fail.
	Serve Server
	// Tools runs the tools-only MCP server of one Codex thread (atm_send &
	// co. bound to cfg.Identity). optional: nil makes tools fail.
	Tools Server
	// Nested runs serve when it was started inside one of serve's own
	// agents (config.EnvParentServe set, to parent): a server that claims
	// nothing and offers nothing, so that the agent's client connects
	// without error. It runs before the configuration is read, which may
	// fail there. optional: nil makes such a serve fail.
	Nested func(ctx context.Context, parent string, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error
	// PluginVersion is the version of the Claude Code plugin this binary
	// was built with (its plugin.json; see plugin.go). optional: "" makes
	// plugin-version fail and skips the comparisons.
	PluginVersion string
}

// errNotBuilt is returned by serve and tools without their Server.
var errNotBuilt = errors.New("this build of atm-agent-mcp has no MCP server (the proxy package did not register one)")

type serveCmd struct {
	locateFlags   `embed:""`
	identityFlags `embed:""`
	codexFlags    `embed:""`
	logFlags      `embed:""`
	mailFlags     `embed:""`
	Resume        optionalValue `placeholder:"ID" help:"Resume a saved session: the most recent one of this identity, or --resume=ID for an agent_id or identity; its first turn continues the agent's own thread (where that cannot be, a new one given its summary or last result, and the result says so)."`
}

// Help is shown by "atm-agent-mcp serve --help".
func (serveCmd) Help() string {
	return `Claude starts this over stdio; you rarely run it by hand. Register it with:

  claude mcp add codex -- atm-agent-mcp serve --team my-team

and give each Claude Code window its own identity: ATM_AGENT_MCP_IDENTITY=NAME claude.
"atm-agent-mcp doctor" checks what serve needs.

stdout carries JSON-RPC and nothing else; logs go to stderr or --log-file. SIGINT or SIGTERM (or the end of stdin) shuts down gracefully: every session's record is closed at once, with its thread, which --resume (or codex with its agent_id) continues; each agent is then asked for a summary, kept if it comes in time. SIGTERM after SIGINT (as Claude Code sends them) is the same shutdown; a repeated signal exits at once.`
}

func (c *serveCmd) flags() config.Flags {
	var f config.Flags
	c.locateFlags.apply(&f)
	c.identityFlags.apply(&f)
	c.codexFlags.apply(&f)
	c.logFlags.apply(&f)
	c.mailFlags.apply(&f)
	if c.Resume.Set {
		f.Resume = &c.Resume.Value
	}
	return f
}

func (c *serveCmd) Run(env *runEnv) error {
	if parent := strings.TrimSpace(env.getenv(config.EnvParentServe)); parent != "" {
		return runNested(env, parent)
	}
	cfg, err := env.load(c.flags(), true)
	if err != nil {
		return err
	}
	if w, ok := cfg.TeamWarning(); ok {
		cfg.Warnings = append(cfg.Warnings, w) // logged, and shown to the client
	}
	if w, ok := pluginWarning(env); ok {
		cfg.Warnings = append(cfg.Warnings, w)
	}
	return runServer(env, cfg, env.progs.Serve)
}

// mailFlags choose how mail for the client reaches it.
type mailFlags struct {
	LeadPush *bool `group:"Mail" negatable:"" help:"Push mail for this identity into the Claude Code session through its messaging socket, when Claude Code offers one (--no-lead-push: it stays in the inbox for atm_read) ($$ATM_AGENT_MCP_LEAD_PUSH; default true)."`
}

func (m mailFlags) apply(f *config.Flags) { f.LeadPush = m.LeadPush }

type toolsCmd struct {
	locateFlags   `embed:""`
	identityFlags `embed:""`
	logFlags      `embed:""`
}

// Help is shown by "atm-agent-mcp tools --help".
func (toolsCmd) Help() string {
	return `The proxy configures Codex to start this once per thread, with the thread's identity, so that a Codex agent's team mail tools always send under its own name. It exits when stdin ends.`
}

func (c *toolsCmd) Run(env *runEnv) error {
	if c.Identity == nil {
		return usageError{errors.New("--identity is required: the tools act for exactly one identity")}
	}
	var f config.Flags
	c.locateFlags.apply(&f)
	c.identityFlags.apply(&f)
	c.logFlags.apply(&f)
	cfg, err := env.load(f, false)
	if err != nil {
		return err
	}
	return runServer(env, cfg, env.progs.Tools)
}

// runServer sets up logging and runs an MCP server hook until it returns
// or a signal arrives.
func runServer(env *runEnv, cfg *config.Config, hook Server) error {
	logger, closeLog, err := newLogger(cfg, env.stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	for _, w := range cfg.Warnings {
		logger.Warn("configuration warning", "file", w.File, "key", w.Key, "problem", w.Message)
	}
	if hook == nil {
		return errNotBuilt
	}
	// The first signal starts the graceful shutdown; Claude Code's SIGTERM
	// after its SIGINT lets it go on; a repeated one exits at once
	// (signals.go).
	ctx, stop := notifyShutdown(logger)
	defer stop()
	logger.Info("starting", "version", Version(), "team", cfg.Team, "team_source", cfg.Sources["team"].String(),
		"identity", cfg.Identity, "backend", cfg.Backend)
	return hook(ctx, cfg, env.stdin, env.stdout, logger)
}

// runNested runs the Nested program on stdin/stdout until stdin ends or a
// signal arrives, logging to stderr (the agent's client keeps it).
func runNested(env *runEnv, parent string) error {
	if env.progs.Nested == nil {
		return errNotBuilt
	}
	w, closeFn := stdio.LogWriter(env.stderr)
	defer closeFn()
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger.Info("standing by: this serve runs inside an agent of another serve, which leads the team; it claims nothing",
		"version", Version(), "parent", parent, "variable", config.EnvParentServe)
	return env.progs.Nested(ctx, parent, env.stdin, env.stdout, logger)
}

// newLogger returns the slog logger of cfg: text lines at cfg.LogLevel, to
// cfg.LogFile (appended, 0600) or else to stderr.
func newLogger(cfg *config.Config, stderr io.Writer) (*slog.Logger, func(), error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, nil, fmt.Errorf("log level %q: %w", cfg.LogLevel, err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open log file: %w", err)
		}
		return slog.New(slog.NewTextHandler(f, opts)), func() { f.Close() }, nil
	}
	w, closeFn := stdio.LogWriter(stderr) // raw writes to a stderr pipe
	return slog.New(slog.NewTextHandler(w, opts)), closeFn, nil
}
