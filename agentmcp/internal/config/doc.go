// Package config resolves the configuration of atm-agent-mcp: command-line
// flags, environment variables, `.atm.toml` files and defaults, with the
// source of every value recorded so that `atm-agent-mcp config` can show it.
//
// # Resolution
//
// Every key is resolved on its own, highest layer first:
//
//  1. a command-line flag ([Flags]);
//  2. an environment variable: ATM_AGENT_MCP_<KEY> (the key upper-cased,
//     e.g. ATM_AGENT_MCP_MODEL), plus ATM_TEAM, ATM_IDENTITY, ATM_CONFIG and
//     ATM_HOME;
//  3. the file named by --config or ATM_CONFIG, if any (it must exist);
//  4. the nearest `.atm.toml`, looking in the working directory and then in
//     each parent up to and including the git root (the first directory
//     holding a `.git` entry); outside a git work tree only the working
//     directory is searched;
//  5. {home}/.config/atm/config.toml, home being ATM_HOME when set and not
//     blank, else HOME;
//  6. the default.
//
// Files use the sections `[core]` (default_team, identity) and
// `[plugins.atm-agent-mcp]` with the keys listed in the README, plus role
// presets in `[plugins.atm-agent-mcp.roles.<name>]` and per-identity
// auto-mail switches in `[plugins.atm-agent-mcp.per_thread_auto_mail]`.
// Tables (roles, per_thread_auto_mail, agents) merge entry by entry across files;
// every other key takes the whole value of the highest layer that sets it.
// Relative paths in a file are relative to that file's directory; relative
// paths from a flag or the environment are relative to the working directory.
//
// # Agent kinds
//
// Besides Codex, serve runs coding agents that speak the Agent Client
// Protocol. [Config.Agents] holds them by name, each an [AgentConfig] that
// codexchild's ACP backend starts, with every field's source:
//
//   - the presets claude (claude-agent-acp), gemini (gemini --acp) and
//     opencode (opencode acp), with the environment each needs and the
//     mode or settings that make it ask for permission (agents.go,
//     measured with their npm packages);
//   - the sections [plugins.atm-agent-mcp.agents.<name>] (command, args,
//     env, mode, config_options, resume, approval, enabled): a section
//     named like a preset overrides the fields it sets; any other name in
//     lower case defines an agent, which needs a command. "codex" is
//     reserved. Each field takes the highest file that sets it; env and
//     config_options merge entry by entry.
//
// A preset's variable is set only when neither the agent's env table nor
// serve's own environment sets it (source "env VAR" then), except
// OPENCODE_PERMISSION, a JSON object into which the opencode preset
// merges its permission settings under the user's own. Agents have no
// flags or ATM_AGENT_MCP_ variables.
//
// # Hosts
//
// Agents may run on other machines reached with OpenSSH's ssh: the
// sections [plugins.atm-agent-mcp.hosts.<name>] (ssh, ssh_args, root,
// codex_bin, agents.<kind>) resolve to [HostConfig]s in Config.Hosts,
// their commands and paths the host's (nothing is looked up or made
// absolute here; a kind the host does not name runs its command's name
// from the PATH there). `host` in [plugins.atm-agent-mcp]
// (ATM_AGENT_MCP_HOST), in a role and in an agent kind's section picks one
// by name, "local" being this machine; [Config.HostFor] says which applies
// (hosts.go).
//
// Two keys chain through more than one name:
//
//   - Identity (the instance identity the proxy claims): --identity,
//     ATM_AGENT_MCP_IDENTITY, `[plugins.atm-agent-mcp] identity` (files, in
//     layer order), ATM_IDENTITY, `[core] identity` (files), then "codex".
//     The plugin's own key outranks ATM_IDENTITY because Claude Code and the
//     atm CLI set ATM_IDENTITY for the human or lead agent that starts the
//     proxy; inheriting it must not make Codex speak under their name when
//     the plugin names its own identity.
//   - DefaultIdentity (an agent started without an explicit identity,
//     FR-2.5): ATM_AGENT_MCP_DEFAULT_IDENTITY, `default_identity` (files),
//     then "codex". It is a setting of its own, never Identity's value:
//     the lead's identity (the one serve's own mail is sent as and pushed
//     for) names the lead, and a second window's
//     ATM_AGENT_MCP_IDENTITY=lead-2 must not hand lead-2's mail to the
//     first agent started without an identity. Outside Claude Code both
//     end in "codex", so that there an agent without an identity still
//     reads the mail of serve's default identity.
//
// Team: --team, ATM_TEAM, `[core] default_team`, then the Claude Code
// session's team, then "default" (ATM's own default). Identity ends
// differently under Claude Code (below).
//
// # Under Claude Code
//
// Claude Code gives every stdio MCP server it starts its session id
// (CLAUDE_CODE_SESSION_ID). serve's client is then a Claude Code session:
// unless an identity is configured, its identity is team-lead (source
// "claude-code session"); an agent started without an identity is "codex"
// (default_identity), so that the client's mail is its own. When no team
// is configured either and the session's team directory
// {home}/.claude/teams/session-<first 8 chars of the id>/ exists (an
// interactive session with agent teams on), that is the team, and then a
// configured identity is the lead's. Such a team's name changes with every Claude Code
// session, so its state lives under the fixed registry key "claude-code"
// (see [Config.RegistryTeam]). The messaging socket Claude Code offers
// (CLAUDE_CODE_MESSAGING_SOCKET and _TOKEN) is read into
// Config.MessagingSocket and MessagingToken; lead_push (--lead-push,
// ATM_AGENT_MCP_LEAD_PUSH, default true) decides whether mail for the
// client's identity is pushed through it.
package config
