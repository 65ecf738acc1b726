// Command atm-agent-mcp-demo plays a scripted MCP conversation through
// atm-agent-mcp against mockcodex and prints the transcript (make demo).
//
//	atm-agent-mcp-demo [-bin bin/atm-agent-mcp] [-codex bin/mockcodex]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/demo"
)

func main() {
	bin := flag.String("bin", "bin/atm-agent-mcp", "the atm-agent-mcp binary")
	codex := flag.String("codex", "bin/mockcodex", "the mock Codex binary")
	flag.Parse()
	if err := demo.Run(demo.Config{Bin: *bin, Codex: *codex, Out: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
