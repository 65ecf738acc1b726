package testscripts

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCLI runs the command-line scenarios testdata/cli_*.txtar: config
// sources and precedence, sessions, prune, summary, bad configuration,
// help, version and exit codes.
func TestCLI(t *testing.T) {
	testscript.Run(t, params("cli_*.txtar"))
}
