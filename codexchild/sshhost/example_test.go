package sshhost_test

import (
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
)

// Every word of a command for a host is quoted for its shell: what the
// shell there splits is exactly the list given.
func ExampleJoin() {
	fmt.Println(sshhost.Join("git", "-C", "/srv/my repo", "commit", "-m", "it's done", "$HOME"))
	// Output:
	// git -C '/srv/my repo' commit -m 'it'\''s done' '$HOME'
}
