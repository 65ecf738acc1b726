package codexchild

import "github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"

// launcher is where the child runs: nil (here) without Config.Host, else
// the host's launcher, one session per child ("codex-<n>").
func (c Config) launcher() childproc.Launcher {
	if c.Host == nil {
		return nil
	}
	return c.Host.Launcher("codex")
}
