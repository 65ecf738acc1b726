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
// Tables (roles, per_thread_auto_mail) merge entry by entry across files;
// every other key takes the whole value of the highest layer that sets it.
// Relative paths in a file are relative to that file's directory; relative
// paths from a flag or the environment are relative to the working directory.
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
//   - DefaultIdentity (a session started without an explicit identity,
//     FR-2.5): ATM_AGENT_MCP_DEFAULT_IDENTITY, `default_identity` (files),
//     then Identity — which itself ends in "codex".
//
// Team: --team, ATM_TEAM, `[core] default_team`, then the Claude Code
// session's team, then "default" (ATM's own default).
//
// # The Claude Code session's team
//
// When no team is configured and serve runs under Claude Code
// (CLAUDE_CODE_SESSION_ID is set) and the session's team directory
// {home}/.claude/teams/session-<first 8 chars of the id>/ exists, that is
// the team (source "claude-code session"). The client is then the lead:
// its identity is team-lead unless one is configured, and a Codex session
// started without an identity is "codex" unless default_identity says
// otherwise. Such a team's name changes with every Claude Code session, so
// its state lives under the fixed registry key "claude-code" (see
// [Config.RegistryTeam]). The messaging socket Claude Code offers
// (CLAUDE_CODE_MESSAGING_SOCKET and _TOKEN) is read into
// Config.MessagingSocket and MessagingToken; lead_push (--lead-push,
// ATM_AGENT_MCP_LEAD_PUSH, default true) decides whether mail for the
// client's identity is pushed through it.
//
// # Errors and warnings
//
// A malformed file fails [Load] with the file and line. A value of the
// wrong type or outside its allowed set fails [Load] with an [*Error] naming
// where it came from (file and key, environment variable, or flag) and the
// expected form; all such errors are reported together. An unknown key in
// `[plugins.atm-agent-mcp]` or in a role table does not fail: it becomes a
// [Warning] naming the file and key. Other sections (`[core]` keys other than
// ours, `[roles]`, `[aliases]`, other plugins) belong to ATM and are left
// alone, except what looks like a misspelling of ours: a top-level table
// within two edits of an ATM section (`[plugin.atm-agent-mcp]`, `[cores]`),
// a plugin table that is probably ours (`[plugins.atm_agent_mcp]`), and a
// `[core]` key within two edits of default_team or identity each draw a
// Warning with "did you mean". [Config.TeamWarning] (a team without its
// directory, with the closest existing team) and [Config.IdentityAdvice]
// (how to give a window its own identity, given where the identity came
// from) serve the commands that report them: config, doctor and serve.
package config
