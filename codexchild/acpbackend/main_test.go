package acpbackend

import (
	"os"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
)

// guardArg makes the test binary run package guard's Main, as serve runs
// it: Config.Guard = {test binary, guardArg}.
const guardArg = "acpbackend-test-guard"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guardArg {
		os.Exit(guard.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}
