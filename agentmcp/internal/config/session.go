package config

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// Environment variables Claude Code gives every stdio MCP server it starts
// (2.1.332).
const (
	// EnvClaudeSessionID holds the Claude Code session's id; an interactive
	// session with agent teams on has the team session-<first 8 chars>.
	EnvClaudeSessionID = "CLAUDE_CODE_SESSION_ID"
	// EnvMessagingSocket is the Unix socket through which text reaches the
	// session's model (see package ccmsg).
	EnvMessagingSocket = "CLAUDE_CODE_MESSAGING_SOCKET"
	// EnvMessagingToken authenticates on EnvMessagingSocket.
	EnvMessagingToken = "CLAUDE_CODE_MESSAGING_TOKEN"
	// EnvClaudeCode is "1" in every process Claude Code starts: its stdio
	// MCP servers (measured with 2.1.318 and 2.1.332) and its Bash tool.
	EnvClaudeCode = "CLAUDECODE"
)

// EnvParentServe is set by serve, for every process it starts (Codex,
// the other agents, and what they start in turn), to "pid N, team T,
// identity I". A serve that finds it runs inside one of serve's own
// agents: a Claude agent's Claude Code loads the user's plugins and MCP
// servers from the same ~/.claude, ours included, and Claude Code passes
// its environment on to them (measured with the Claude Code 2.1.318 that
// claude-agent-acp 0.101.0 runs). Such a serve claims nothing and stands
// by (see the agentmcp package).
const EnvParentServe = "ATM_AGENT_MCP_PARENT_SERVE"

const (
	// SourceSession is the source kind of the team (and of the identity
	// team-lead) taken from the Claude Code session that started serve.
	SourceSession SourceKind = "claude-code session"
	// SessionTeamPrefix starts the name of a Claude Code session team.
	SessionTeamPrefix = "session-"
	// LeadIdentity is the identity of the lead, the Claude Code session
	// itself, in its session team.
	LeadIdentity = "team-lead"
	// SessionRegistry is the registry key of every session team: its state
	// lives in {home}/.config/atm/agent-sessions/claude-code/, one instance
	// registry per Claude Code session (named after its team), so that a
	// later session finds the Codex agents of earlier ones (see
	// Config.RegistryTeam).
	SessionRegistry = "claude-code"
)

// SessionTeamName returns the team name Claude Code gives the session with
// id: "session-" and the id's first 8 characters (all of a shorter id),
// with what is not a letter, digit, "_" or "-" replaced by "-" as Claude
// Code does for paths.
func SessionTeamName(id string) string {
	id = strings.TrimSpace(id)
	if len(id) > 8 {
		id = id[:8]
	}
	return SessionTeamPrefix + strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, id)
}

// sessionTeam returns the Claude Code session's team when serve runs under
// Claude Code (EnvClaudeSessionID set) and that team's directory exists in
// home; ok is false otherwise.
func (r *resolver) sessionTeam(home string) (name string, src Source, ok bool) {
	id, set := r.env(EnvClaudeSessionID)
	if !set {
		return "", Source{}, false
	}
	name = SessionTeamName(id)
	if atmclient.ValidateName("team", name) != nil {
		return "", Source{}, false
	}
	dir := filepath.Join(home, ".claude", "teams", name)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", Source{}, false
	}
	return name, Source{Kind: SourceSession, Detail: EnvClaudeSessionID + ", " + dir}, true
}

// resolveSession applies what running under Claude Code implies
// (EnvClaudeSessionID set). The client is a Claude Code session: unless an
// identity is configured, its identity is team-lead. When no team is
// configured and the session's team directory exists, that is the team.
// The agents' default identity is not touched: it is default_identity,
// else "codex", under Claude Code as elsewhere, so that no agent takes the
// client's name and the client's mail can be pushed to it.
func (r *resolver) resolveSession(cfg *Config) {
	_, session := r.env(EnvClaudeSessionID)
	cc, _ := r.env(EnvClaudeCode)
	cfg.ClaudeCode = session || strings.TrimSpace(cc) == "1" || cfg.MessagingSocket != ""
	if !session {
		return
	}
	name, src, ok := r.sessionTeam(cfg.Home)
	if ok && cfg.Sources["team"].Kind == SourceDefault {
		cfg.Team, cfg.SessionTeam = name, true
		cfg.Sources["team"] = src
	}
	if cfg.Sources["identity"].Kind == SourceDefault {
		cfg.Identity = LeadIdentity
		detail := "the client, a Claude Code session"
		if cfg.SessionTeam {
			detail = "the lead of " + cfg.Team
		}
		cfg.Sources["identity"] = Source{Kind: SourceSession, Detail: detail}
	}
}

// RegistryTeam returns where the proxy's state lives: the registry key
// (the directory under agent-sessions) and the instance registry within it.
// For a configured team they are the team and the identity. For a Claude
// Code session team, whose name changes with every session, they are the
// fixed key SessionRegistry and the session team's name: the sessions of
// every Claude Code session share one directory, so `sessions --team
// claude-code` lists them and a later session resumes them (the proxy takes
// over the registries of ended sessions at start).
func (c *Config) RegistryTeam() (team, instance string) {
	if c.SessionTeam {
		return SessionRegistry, c.Team
	}
	return c.Team, c.Identity
}
