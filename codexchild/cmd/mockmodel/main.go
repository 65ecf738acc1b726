// Command mockmodel serves the loopback mock of the OpenAI Responses API
// (make build: bin/mockmodel). It is package
// github.com/atm-agent-mcp/atm-agent-mcp/codexchild/mockmodel, whose
// documentation describes its usage.
package main

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/mockmodel"
)

func main() {
	os.Exit(mockmodel.Main())
}
