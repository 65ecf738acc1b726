// Command mockmodel serves the loopback model mock, the OpenAI Responses
// API and the Anthropic Messages API (make build: bin/mockmodel). It is package
// github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel, whose
// documentation describes its usage.
package main

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
)

func main() {
	os.Exit(mockmodel.Main())
}
