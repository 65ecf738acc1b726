package testscripts

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCLI runs the command-line scenarios testdata/cli_*.txtar: config
// sources and precedence, sessions, prune, summary, bad configuration,
// doctor, help, version and exit codes. They have the proxy scenarios'
// commands (proxyParams), so that a doctor scenario can hold a serve open.
func TestCLI(t *testing.T) {
	testscript.Run(t, proxyParams(t, "cli_*.txtar"))
}
