package agentmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/cli"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxy"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/stdio"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// serveProcs is how many processors serve runs Go code on (0: leave the
// runtime's choice): one, unless GOMAXPROCS is set. The proxy's work is
// serial (one router, one Codex reader that also answers replies) and
// mostly waiting; on one processor a message passes from goroutine to
// goroutine without waking another thread. On a 2-core machine the p50 of
// BenchmarkToolsCallOverheadProcess is about 30 µs lower (10 of 11
// interleaved pairs). The Codex child is not affected.
func serveProcs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return 0 // the runtime applied it
	}
	return 1
}

// serve runs the MCP proxy with the resolved configuration. When another
// serve holds its identity it exits with the clash and its fix, except
// under Claude Code (identity.go).
func serve(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	if n := serveProcs(os.Getenv); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	opts, err := proxyOptions(cfg, logger)
	if err != nil {
		return err
	}
	// The signals after the first wait for the sessions' records.
	opts.RecordsClosed = cli.RecordsWritten(ctx)
	srv, err := proxy.New(opts)
	if conflict := instanceConflict(cfg, err); conflict != nil {
		srv, err = onConflict(cfg, &opts, err, conflict, logger)
		if errors.Is(err, errStandBy) {
			return standBy(ctx, cfg, conflict, stdin, stdout, logger)
		}
	}
	if err != nil {
		return err
	}
	if cfg.Resume.Enabled {
		if _, err := srv.Resume(cfg.Resume.Target); err != nil {
			logger.Warn("nothing resumed", "err", err)
		}
	}
	in, out, release := stdio.Pollable(stdin, stdout)
	defer release()
	return srv.Run(ctx, in, out)
}

// nested runs a serve started inside one of serve's own agents
// (config.EnvParentServe): it stands by with no tools and claims nothing.
func nested(ctx context.Context, parent string, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	in, out, release := stdio.Pollable(stdin, stdout)
	defer release()
	return proxy.RunStandby(ctx, proxy.StandbyConfig{
		Why: "atm-agent-mcp is not active in this session: it runs inside an agent of the atm-agent-mcp serve (" + parent +
			") that leads the team, and an agent must not start a second lead of it. Send and read team mail with your own team-mail tools " +
			"(atm_send, atm_read, atm_broadcast, atm_pending_count).",
		Version: cli.Version(), Logger: logger,
	}, in, out)
}

// toolsServer runs the per-thread tools-only server. It ends with its
// stdin, and also when its parent (Codex) is gone: Codex starts it in a
// process group of its own, where the kill of Codex's group does not reach.
// The watch on the parent is joined before it returns.
func toolsServer(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	defer func() { stopWatch(); watching.Wait() }()
	watching.Go(func() { exitWithParent(watchCtx, logger) })
	return tools.ServeTools(ctx, tools.ToolsOptions{Home: cfg.Home, Team: cfg.Team, Identity: cfg.Identity,
		Agent: os.Getenv(session.EnvSessionKind), AgentID: os.Getenv(session.EnvSessionAgentID), AuditTeam: os.Getenv(session.EnvRegistryTeam),
		Version: cli.Version(), TeamProblem: teamProblem(cfg), Logger: logger}, stdin, stdout)
}

// teamProblem says, when it is asked, what is wrong with the configured
// team ("team \"my-teem\" does not exist (…); did you mean my-team?"), or
// "" once the team exists.
func teamProblem(cfg *config.Config) func() string {
	return func() string {
		if p, missing := cfg.TeamProblem(); missing {
			return "team " + p
		}
		return ""
	}
}

// proxyOptions maps the configuration onto the proxy.
func proxyOptions(cfg *config.Config, logger *slog.Logger) (proxy.Options, error) {
	defaults, err := cfg.ThreadDefaults("")
	if err != nil {
		return proxy.Options{}, err
	}
	roles := map[string]proxy.ThreadDefaults{}
	roleIsolation, roleBusyMail := map[string]string{}, map[string]string{}
	for name := range cfg.Roles {
		roleIsolation[name] = cfg.IsolationFor(name)
		roleBusyMail[name] = cfg.Roles[name].BusyMail
		ts, err := cfg.ThreadDefaults(name)
		if err != nil {
			return proxy.Options{}, err
		}
		roles[name] = proxy.ThreadDefaults{Model: ts.Model, ReasoningEffort: ts.ReasoningEffort, Sandbox: ts.Sandbox, ApprovalPolicy: ts.ApprovalPolicy}
	}
	var base, extra string
	if cfg.BasePromptFile != "" {
		b, err := os.ReadFile(cfg.BasePromptFile)
		if err != nil {
			return proxy.Options{}, fmt.Errorf("base_prompt_file: %w", err)
		}
		base = string(b)
	}
	if cfg.ExtraInstructionsFile != "" {
		b, err := os.ReadFile(cfg.ExtraInstructionsFile)
		if err != nil {
			return proxy.Options{}, fmt.Errorf("extra_instructions_file: %w", err)
		}
		extra = string(b)
	} else {
		extra = session.BundledExtraInstructions
	}
	var toolServer []string
	if exe, err := selfPath(); err == nil {
		toolServer = []string{exe, "tools"}
	} else {
		logger.Warn("per-thread ATM tools disabled: cannot find this executable", "err", err)
	}
	// One backend per agent kind: the Codex child (registry.DefaultKind,
	// under the proxy's supervisor, which restarts it with NewBackend) and
	// one ACP backend per configured agent (agents.go).
	codex, err := newBackend(cfg, logger)
	if err != nil {
		return proxy.Options{}, err
	}
	agents := agentBackends(cfg, guardCommandLine(logger), logger)
	hosts := hostOptions(cfg, guardCommandLine(logger), logger)
	regTeam, regInstance := cfg.RegistryTeam()
	_, teamMissing := cfg.TeamProblem()
	return proxy.Options{
		Home: cfg.Home, Team: cfg.Team, Identity: cfg.Identity, DefaultIdentity: cfg.DefaultIdentity,
		RegistryTeam: regTeam, RegistryInstance: regInstance, SessionTeam: cfg.SessionTeam, TeamMissing: teamMissing,
		LeadPush: cfg.LeadPush, MessagingSocket: cfg.MessagingSocket, MessagingToken: cfg.MessagingToken,
		ClaudeSessionID:  os.Getenv(config.EnvClaudeSessionID),
		ConfigWarnings:   configWarnings(cfg),
		TeamProblem:      teamProblem(cfg),
		Backend:          codex,
		Defaults:         proxy.ThreadDefaults{Model: defaults.Model, ReasoningEffort: defaults.ReasoningEffort, Sandbox: defaults.Sandbox, ApprovalPolicy: defaults.ApprovalPolicy},
		Roles:            roles,
		BaseInstructions: base, ExtraInstructions: extra,
		Isolation: cfg.IsolationFor(""), RoleIsolation: roleIsolation, WorktreeBase: cfg.WorktreeBase,
		WorktreeSetup: cfg.WorktreeSetup, WorktreePorts: cfg.WorktreePorts, MergeCheck: cfg.MergeCheck, PortsDir: os.Getenv("ATM_PORTS_DIR"),
		RequestTimeout: cfg.RequestTimeout, MaxSessions: cfg.MaxConcurrentThreads,
		ElicitationTimeout: cfg.ElicitationTimeout, ApprovalFallback: cfg.ApprovalFallback, MCPProtocol: cfg.MCPProtocol,
		NewBackend: func() (backend.Backend, error) { return newBackend(cfg, logger) }, CodexRestart: cfg.CodexRestart,
		Agents: agents, AgentCheck: agentCheck(cfg), Hosts: hosts, HostFor: hostFor(cfg), StaleInstance: staleInstance(cfg),
		AutoMail: cfg.AutoMail, AutoMailFor: cfg.AutoMailFor, BusyMail: cfg.BusyMail, RoleBusyMail: roleBusyMail,
		MailPollInterval: cfg.MailPollInterval, MailIdleTimeout: cfg.IdleTimeout, PersistThreads: cfg.PersistThreads, MaxMailMessages: cfg.MaxMailMessages, MaxMailMessageLength: cfg.MaxMailMessageLength,
		ToolServer: toolServer, ToolServerEnv: map[string]string{"ATM_TEAM": cfg.Team, session.EnvRegistryTeam: regTeam},
		MaxResultChars: cfg.MaxResultChars, EventRing: cfg.EventBufferSize, ProgressInterval: progressInterval(cfg.ProgressInterval),
		Budgets: budgets(cfg), Prices: cli.Prices(cfg),
		Logger: logger, Version: cli.Version(),
	}, nil
}

// budgets maps the configured token budgets onto the sessions'.
func budgets(cfg *config.Config) session.Budgets {
	b := session.Budgets{Session: int64(cfg.BudgetTokens), Team: int64(cfg.TeamBudgetTokens), Interrupt: cfg.BudgetInterrupt}
	for name, r := range cfg.Roles {
		if r.BudgetTokens > 0 {
			if b.Roles == nil {
				b.Roles = map[string]int64{}
			}
			b.Roles[name] = int64(r.BudgetTokens)
		}
	}
	return b
}

// selfPath is the absolute path this program was started as. os.Args[0] is
// preferred over os.Executable: a multi-call binary (the test binary of the
// testscripts) dispatches on the name it is started by, which
// os.Executable would resolve away.
func selfPath() (string, error) {
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	return os.Executable()
}

// newBackend builds the Codex child for the configured backend: auto picks
// mcp-server for Codex ≤ 0.153 and app-server otherwise, once, at first use.
//
// The child is started through this program's codex-guard, so that
// nothing of Codex outlives serve, however serve ends.
func newBackend(cfg *config.Config, logger *slog.Logger) (backend.Backend, error) {
	return codexchild.New(codexchild.Config{
		Bin: cfg.CodexBin, Args: cfg.CodexArgs(), Env: []string{parentServeEnv(cfg)},
		Logger: logger, DefaultTimeout: cfg.RequestTimeout, Guard: guardCommandLine(logger),
		HandshakeTimeout: min(cfg.HandshakeTimeout, cfg.RequestTimeout),
		ClientInfo:       codexchild.ClientInfo{Name: "atm-agent-mcp", Version: cli.Version()},
		Kind:             codexchild.Kind(cfg.Backend),
		SubAgentWait:     cfg.SubAgentWait,
	})
}

// guardCommandLine is the command that runs this program's guard (package
// guard's Main), through which Codex and every other agent are started;
// nil, with a warning, when this executable cannot be found.
func guardCommandLine(logger *slog.Logger) []string {
	exe, err := selfPath()
	if err != nil {
		logger.Warn("agents run unguarded: they may outlive a killed serve", "err", err)
		return nil
	}
	return []string{exe, guardCommand}
}

// exitWithParent ends the process once its parent has gone (the process
// was reparented), checking every half second; it returns when ctx ends.
func exitWithParent(ctx context.Context, logger *slog.Logger) {
	parent := os.Getppid()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if os.Getppid() != parent {
			logger.Info("the parent process is gone; exiting")
			os.Exit(0)
		}
	}
}

// progressInterval maps progress_interval_ms onto the tools' keep-alive
// interval, where 0 means the default: 0 (none) becomes negative.
func progressInterval(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// configWarnings renders the configuration's warnings for the client
// (agent_status, the first tool error).
func configWarnings(cfg *config.Config) []string {
	var ws []string
	for _, w := range cfg.Warnings {
		ws = append(ws, w.String())
	}
	return ws
}
