package agentmcp

import (
	"io"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/cli"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
)

// guardCommand is the subcommand serve starts its Codex child through
// (package guard): `atm-agent-mcp codex-guard <codex> <args>...`. It is not
// for people and is not in the usage.
const guardCommand = "codex-guard"

// Main runs the atm-agent-mcp command line with args (without the program
// name) and returns the process exit code: 0 ok, 1 failure, 2 usage error.
// getenv reads the environment (nil means os.Getenv). The binary's main
// and the testscripts both call it, so they run the same program.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && args[0] == guardCommand {
		return guard.Main(args[1:])
	}
	return cli.Run(args, stdin, stdout, stderr, getenv, cli.Programs{Serve: serve, Tools: toolsServer, Nested: nested, PluginVersion: pluginVersion()})
}
