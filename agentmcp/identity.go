package agentmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/cli"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxy"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/stdio"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// maxLeadSuffix bounds the search for a free identity: team-lead-2 up to
// team-lead-20.
const maxLeadSuffix = 20

// errStandBy says serve must stand by (standBy) rather than run.
var errStandBy = errors.New("stand by")

// instanceConflict returns the conflict when err is another serve holding
// this serve's own instance identity (not a session's), else nil.
func instanceConflict(cfg *config.Config, err error) *registry.ConflictError {
	var conflict *registry.ConflictError
	if _, inst := cfg.RegistryTeam(); errors.As(err, &conflict) && conflict.Identity == inst {
		return conflict
	}
	return nil
}

// clashError is the clash as a terminal reads it: what holds the identity,
// and how to give this serve one of its own.
func clashError(cfg *config.Config, err error) error {
	return fmt.Errorf("%w\nanother serve (another Claude Code window?) runs as %q in team %q: %s",
		err, cfg.Identity, cfg.Team, cfg.IdentityAdvice())
}

// onConflict decides what a serve whose identity another serve holds does.
// Outside Claude Code (a terminal, a script) it fails with the clash.
// Under Claude Code a failed connection would show its user only
// CONNECTION_CLOSED, and Claude Code would remember the failure for 15
// minutes (~/.claude/mcp-needs-auth-cache.json) and start the next session
// without the server. So there:
//
//   - a defaulted identity (team-lead, outside a session team) moves to
//     the next free one, team-lead-2 and on, and says so: the log, the
//     server's instructions, agent_status and the first tool result
//     (proxy.Options.Notices);
//   - an identity that was set (flag, variable, file) is the user's
//     choice: serve stands by (errStandBy) and answers every tool call
//     with the clash and its fix.
func onConflict(cfg *config.Config, opts *proxy.Options, err error, conflict *registry.ConflictError, logger *slog.Logger) (*proxy.Server, error) {
	switch {
	case !cfg.ClaudeCode:
		return nil, clashError(cfg, err)
	case !cfg.IdentityDefaulted():
		return nil, errStandBy
	}
	held, notices := cfg.Identity, opts.Notices
	for n := 2; n <= maxLeadSuffix; n++ {
		next := fmt.Sprintf("%s-%d", held, n)
		opts.Identity, opts.RegistryInstance = next, next
		opts.Notices = append(notices[:len(notices):len(notices)], fmt.Sprintf(
			"this window runs as %q in team %q, because %q is held by another serve (pid %d, another Claude Code window?): "+
				"its mail is sent as %s, and mail to %s reaches this session; to choose the name, start Claude Code with ATM_AGENT_MCP_IDENTITY=NAME claude",
			next, cfg.Team, held, conflict.HolderPID, next, next))
		srv, err := proxy.New(*opts)
		var again *registry.ConflictError
		if errors.As(err, &again) && again.Identity == next {
			continue
		}
		if err != nil {
			return nil, err
		}
		logger.Warn("identity held by another serve: moved to the next free one", "held", held, "holder_pid", conflict.HolderPID, "identity", next)
		cfg.Identity = next
		cfg.Sources["identity"] = config.Source{Kind: config.SourceSession,
			Detail: fmt.Sprintf("the next free identity (%s is held by pid %d)", held, conflict.HolderPID)}
		return srv, nil
	}
	logger.Warn("identity held by another serve, and so are its next free ones", "held", held, "up_to", fmt.Sprintf("%s-%d", held, maxLeadSuffix))
	opts.Identity, opts.RegistryInstance, opts.Notices = held, held, notices
	return nil, errStandBy
}

// standBy runs serve as a server that claims nothing and answers every
// tool call with the clash and its fix, so that the user reads it in the
// conversation (proxy.RunStandby).
func standBy(ctx context.Context, cfg *config.Config, conflict *registry.ConflictError, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	since := ""
	if !conflict.Since.IsZero() {
		since = " since " + conflict.Since.Local().Format(time.DateTime)
	}
	why := fmt.Sprintf("atm-agent-mcp is not running in this window: its identity %q in team %q is held by another serve (pid %d%s; another Claude Code window?), "+
		"and this one claims nothing and starts no agents. Fix: %s. Or end the other window, then reconnect this server (/mcp, then Reconnect).",
		cfg.Identity, cfg.Team, conflict.HolderPID, since, cfg.IdentityAdvice())
	logger.Error("identity held by another serve: standing by, every tool call answers with the clash",
		"identity", cfg.Identity, "team", cfg.Team, "holder_pid", conflict.HolderPID, "fix", cfg.IdentityAdvice())
	in, out, release := stdio.Pollable(stdin, stdout)
	defer release()
	return proxy.RunStandby(ctx, proxy.StandbyConfig{Why: why, Tools: tools.Definitions, Version: cli.Version(), Logger: logger}, in, out)
}

// parentServeEnv is config.EnvParentServe for the processes serve starts:
// this serve's pid and team, so that a serve started inside one of its
// agents stands by (nested) and says whose agent it is in.
func parentServeEnv(cfg *config.Config) string {
	return fmt.Sprintf("%s=pid %d, team %s", config.EnvParentServe, os.Getpid(), cfg.Team)
}
