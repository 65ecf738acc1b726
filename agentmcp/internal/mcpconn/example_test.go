package mcpconn_test

import (
	"context"
	"fmt"
	"io"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// greeter answers the tool "greet" with a greeting for its "name".
type greeter struct{}

func (greeter) CallTool(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	mcpconn.Release(ctx) // nothing here waits, but a real tool would
	name, err := c.Args.Str("name")
	if err != nil {
		return nil, err
	}
	return &mcpconn.ToolResult{Text: "hello, " + name}, nil
}

// A Conn serving one tools/call over in-memory pipes.
func Example() {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := mcpconn.New(mcpconn.Config{Handler: greeter{}, ServerInfo: mcpconn.ServerInfo{Name: "greeter", Version: "1"}})
	conn.Start(inR, outW)

	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`+"\n")
	m, _ := jsonrpcframe.NewLineReader(outR, nil).Read()
	fmt.Println(string(m.Result))

	inW.Close()
	<-conn.Done()
	conn.Close()
	// Output: {"content":[{"text":"hello, Ada","type":"text"}]}
}
