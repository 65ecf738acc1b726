package realcodex_test

import (
	"os"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

func TestMain(m *testing.M) {
	realcodex.MaybeServeTools() // this binary doubles as the per-thread MCP tool server
	os.Exit(m.Run())
}
