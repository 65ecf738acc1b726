package testscripts

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCLI runs the command-line scenarios testdata/cli_*.txtar: config
// sources and precedence, sessions, prune, summary, bad configuration,
// doctor (its hosts against a loopback sshd, [sshd]), help, version and
// exit codes. They have the proxy scenarios' commands (proxyParams), so
// that a doctor scenario can hold a serve open.
func TestCLI(t *testing.T) {
	p := proxyParams(t, "cli_*.txtar")
	p.Condition = sshdCondition(nil)
	testscript.Run(t, p)
}
