package agentmcp

import (
	"io"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/cli"
)

// Main runs the atm-agent-mcp command line with args (without the program
// name) and returns the process exit code: 0 ok, 1 failure, 2 usage error.
// getenv reads the environment (nil means os.Getenv). The binary's main
// and the testscripts both call it, so they run the same program.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Run(args, stdin, stdout, stderr, getenv, cli.Programs{Serve: serve, Tools: toolsServer})
}
