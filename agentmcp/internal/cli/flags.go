package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

// locateFlags find the configuration and the team.
type locateFlags struct {
	Config *string `placeholder:"FILE" help:"Also read this configuration file; it ranks above .atm.toml and the global file ($$ATM_CONFIG)."`
	Team   *string `placeholder:"NAME" help:"ATM team ($$ATM_TEAM, [core] default_team; else the Claude Code session's team session-<id8> when it exists; else \"default\")."`
}

// identityFlags name the instance identity.
type identityFlags struct {
	Identity *string `placeholder:"NAME" help:"Team identity this proxy claims ($$ATM_AGENT_MCP_IDENTITY, [plugins.atm-agent-mcp] identity, $$ATM_IDENTITY, [core] identity; default \"codex\")."`
}

// codexFlags choose how Codex runs.
type codexFlags struct {
	Role           *string `group:"Codex" placeholder:"NAME" help:"Role preset from [plugins.atm-agent-mcp.roles.NAME] for sessions that name none ($$ATM_AGENT_MCP_ROLE)."`
	Model          *string `group:"Codex" placeholder:"MODEL" help:"Model for new sessions; without one Codex uses its own default ($$ATM_AGENT_MCP_MODEL)."`
	Fast           *bool   `group:"Codex" help:"Use fast_model instead of the configured model, which stays as configured ($$ATM_AGENT_MCP_FAST)."`
	Subagents      *bool   `group:"Codex" negatable:"" help:"Enable (or with --no-subagents disable) Codex sub-agents: passes -c features.multi_agent=true ($$ATM_AGENT_MCP_SUBAGENTS)."`
	Readonly       *bool   `group:"Codex" help:"Run every session in the read-only sandbox ($$ATM_AGENT_MCP_READONLY)."`
	Explore        *bool   `group:"Codex" help:"Same as --readonly."`
	Sandbox        *string `group:"Codex" placeholder:"MODE" help:"Sandbox: read-only, workspace-write or danger-full-access ($$ATM_AGENT_MCP_SANDBOX; default workspace-write)."`
	ApprovalPolicy *string `group:"Codex" placeholder:"POLICY" help:"Approval policy: untrusted, on-failure, on-request or never ($$ATM_AGENT_MCP_APPROVAL_POLICY; default on-request)."`
	Backend        *string `group:"Codex" placeholder:"KIND" help:"Codex protocol: auto, mcp-server or app-server ($$ATM_AGENT_MCP_BACKEND; default auto)."`
	CodexBin       *string `group:"Codex" placeholder:"PATH" help:"Codex executable ($$ATM_AGENT_MCP_CODEX_BIN; default \"codex\" from PATH)."`
	Timeout        *string `group:"Codex" placeholder:"SECONDS" help:"Per-turn timeout in seconds, or a duration like 10m ($$ATM_AGENT_MCP_REQUEST_TIMEOUT_SECS; default 300)."`
}

// logFlags choose where logs go.
type logFlags struct {
	LogLevel *string `group:"Logging" placeholder:"LEVEL" help:"Log level: debug, info, warn or error ($$ATM_AGENT_MCP_LOG_LEVEL; default info)."`
	LogFile  *string `group:"Logging" placeholder:"FILE" help:"Append logs to this file instead of stderr ($$ATM_AGENT_MCP_LOG_FILE)."`
}

// apply copies the flags that were given into f.
func (l locateFlags) apply(f *config.Flags) {
	f.Config, f.Team = l.Config, l.Team
}

func (i identityFlags) apply(f *config.Flags) { f.Identity = i.Identity }

func (c codexFlags) apply(f *config.Flags) {
	f.Role, f.Model, f.Fast, f.Subagents = c.Role, c.Model, c.Fast, c.Subagents
	f.Sandbox, f.ApprovalPolicy, f.Backend, f.CodexBin, f.Timeout = c.Sandbox, c.ApprovalPolicy, c.Backend, c.CodexBin, c.Timeout
	switch {
	case c.Explore != nil && (c.Readonly == nil || *c.Explore):
		f.Readonly, f.ReadonlyFlag = c.Explore, "--explore"
	case c.Readonly != nil:
		f.Readonly = c.Readonly
	}
}

func (l logFlags) apply(f *config.Flags) { f.LogLevel, f.LogFile = l.LogLevel, l.LogFile }

// optionalValue is a flag whose value may be omitted: "--resume",
// "--resume=ID" or "--resume ID". The commands that use it take no
// positional arguments, so a following word is always its value.
type optionalValue struct {
	Set   bool
	Value string
}

// Decode implements kong.MapperValue.
func (o *optionalValue) Decode(ctx *kong.DecodeContext) error {
	o.Set = true
	if t := ctx.Scan.Peek(); t.Type == kong.FlagValueToken || t.IsValue() {
		o.Value = fmt.Sprint(ctx.Scan.Pop().Value)
	}
	return nil
}

// IsBool implements kong.BoolMapperValue: the value is optional.
func (o *optionalValue) IsBool() bool { return true }

// defaultPruneAge is the age --prune uses without a value.
const defaultPruneAge = 7 * 24 * time.Hour

// parseAge parses an age such as 7d, 36h or 90m.
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n >= 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--prune %q: expected an age such as 7d, 24h or 30m", s)
}
