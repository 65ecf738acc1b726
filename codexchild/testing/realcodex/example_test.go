package realcodex_test

import (
	"io"
	"os"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// The tool server that Home.ToolServer makes Codex start speaks plain NDJSON
// MCP; here it answers the tools/call Codex would send for a thread.
func ExampleServeEchoTool() {
	in := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo_identity","arguments":{"text":"hi"},"_meta":{"threadId":"T1"}}}` + "\n"
	if err := realcodex.ServeEchoTool(strings.NewReader(in), os.Stdout, "alice", io.Discard); err != nil {
		panic(err)
	}
	// Output:
	// {"id":7,"jsonrpc":"2.0","result":{"content":[{"text":"identity=alice thread=T1 text=hi","type":"text"}],"isError":false}}
}
