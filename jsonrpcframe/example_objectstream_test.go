package jsonrpcframe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// A jsonrpc2.Conn over Content-Length framing: a server that greets and a
// client that asks it to.
func ExampleObjectStream() {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	ctx := context.Background()

	server := jsonrpc2.NewConn(ctx,
		jsonrpcframe.NewObjectStream(sr, sw, sw, jsonrpcframe.FramingHeader, nil),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			var p struct{ Name string }
			if err := json.Unmarshal(*req.Params, &p); err != nil {
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
			}
			return "hello, " + p.Name, nil
		}))
	defer server.Close()
	client := jsonrpc2.NewConn(ctx,
		jsonrpcframe.NewObjectStream(cr, cw, cw, jsonrpcframe.FramingHeader, nil),
		jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	defer client.Close()

	var greeting string
	if err := client.Call(ctx, "greet", map[string]string{"name": "world"}, &greeting); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(greeting)
	// Output: hello, world
}
