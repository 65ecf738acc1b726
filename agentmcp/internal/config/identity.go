package config

import "fmt"

// IdentityAdvice says how to give this serve an identity of its own when
// another serve (another Claude Code window) holds it, advising only what
// can take effect given where the identity came from: a flag outranks
// ATM_AGENT_MCP_IDENTITY and the files, so with --identity in a shared
// registration (.mcp.json) the only fix is to take it out and name each
// window's identity in its environment.
func (c *Config) IdentityAdvice() string {
	const perWindow = "start each Claude Code window with its own identity: ATM_AGENT_MCP_IDENTITY=NAME claude"
	src := c.Sources["identity"]
	switch src.Kind {
	case SourceFlag:
		return fmt.Sprintf("the identity is the flag %s %s of this server's registration, which every window that shares it passes: "+
			"remove --identity from the registration (.mcp.json or claude mcp add) and %s (a flag outranks the variable)", src.Detail, c.Identity, perWindow)
	case SourceEnv:
		return fmt.Sprintf("the identity comes from %s=%s in this window's environment: start this window with another value (%s=NAME claude)",
			src.Detail, c.Identity, src.Detail)
	case SourceFile:
		return fmt.Sprintf("the identity is %s, which every window in this project reads: %s (the variable outranks the file)", src, perWindow)
	}
	return perWindow + " (the default identity is the same for every window)"
}

// IdentityDefaulted reports whether nobody chose the instance identity: it
// is the Claude Code session's team-lead (or the plain default) outside a
// session team, whose registry is the session's own. Under Claude Code
// such an identity, when another serve holds it, moves to the next free
// one (team-lead-2); a chosen one does not.
func (c *Config) IdentityDefaulted() bool {
	k := c.Sources["identity"].Kind
	return (k == SourceSession || k == SourceDefault) && !c.SessionTeam
}
