package jsonrpcframe_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// A tiny server loop: detect the client's framing, answer requests in the
// same framing, answer a line that is not JSON with -32700, and go on.
func Example() {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}
this is not JSON
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":"two","method":"ping"}
`)
	r, w := jsonrpcframe.NewAuto(in, os.Stdout, nil)
	for {
		m, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var bad *jsonrpcframe.MessageError
		if errors.As(err, &bad) {
			_ = w.Write(bad.Response())
			continue
		}
		if err != nil {
			fmt.Println("read:", err)
			return
		}
		if m.IsRequest() {
			resp, _ := jsonrpcframe.NewResponse(m.ID, map[string]any{})
			_ = w.Write(resp)
		}
	}
	fmt.Println("framing:", r.Framing())
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"jsonrpcframe: parse error: not valid JSON"}}
	// {"jsonrpc":"2.0","id":"two","result":{}}
	// framing: ndjson
}

// Read two fields of a large notification without decoding it.
func ExampleMembers() {
	m, _ := jsonrpcframe.Parse([]byte(`{"jsonrpc":"2.0","method":"codex/event","params":{"_meta":{"requestId":3},"msg":{"type":"task_complete","last_agent_message":"done"}}}`))
	params, _ := jsonrpcframe.Members(m.Params)
	msg, _ := jsonrpcframe.Members(jsonrpcframe.Lookup(params, "msg"))
	typ, _ := jsonrpcframe.String(jsonrpcframe.Lookup(msg, "type"))
	fmt.Println(typ)
	// Output: task_complete
}

// Write a small JSON value by hand, with strings quoted as JSON.
func ExampleAppendString() {
	b := []byte(`{"prompt":`)
	b = jsonrpcframe.AppendString(b, "say \"hi\"\n<then stop>")
	b = append(b, '}')
	fmt.Println(string(b))
	// Output: {"prompt":"say \"hi\"\n<then stop>"}
}

// A Pipe in place of an *os.File: messages over an OS pipe, as between an
// MCP client and a server on stdio.
func ExampleNewPipe() {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	go func() {
		defer w.Close()
		out := jsonrpcframe.NewLineWriter(jsonrpcframe.NewPipe(w))
		ping, _ := jsonrpcframe.NewRequest(jsonrpcframe.IntID(1), "ping", nil)
		_ = out.Write(ping)
	}()
	in := jsonrpcframe.NewLineReader(jsonrpcframe.PipeReader(r), nil)
	m, err := in.Read()
	fmt.Println(m.Method, m.ID.String(), err)
	// Output: ping 1 <nil>
}
