package tools

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// FuzzUpstream drives the whole upstream request path with arbitrary
// client bytes: framing (mcpconn's reader), routing (the Conn's dispatch)
// and the tools' argument parsing, over real registry and inbox files and
// a fake Codex. Whatever the bytes, the server must not panic, must write
// only JSON-RPC, and must answer the ping that follows them.
func FuzzUpstream(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"codex","arguments":{"prompt":"hi","identity":"arch"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"atm_send","arguments":{"identity":"arch","to":"dev-1","message":"x"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"agent_status","arguments":{"agent_id":7}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"codex","arguments":{"prompt":"x","identity":"../x"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"codex","arguments":{},"requestState":"rs-x","inputResponses":{"a":{"action":"accept"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`,
		"Content-Length: 5\r\n\r\n{}[]x",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\\u0000\",\"method\":\"tools/list\"}",
	} {
		f.Add(seed)
	}
	h := newHarness(f)
	f.Fuzz(func(t *testing.T, input string) {
		if strings.HasPrefix(strings.TrimSpace(input), "Content-Length") {
			t.Skip("the framing is chosen by the first message; FuzzReaders covers Content-Length")
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		conn := mcpconn.New(mcpconn.Config{Handler: h.env, Tools: Definitions})
		conn.Start(inR, outW)
		go func() {
			_, _ = io.WriteString(inW, strings.ReplaceAll(input, "\n", " ")+"\n")
			_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":"fuzz-ping","method":"ping"}`+"\n")
		}()
		answered := make(chan error, 1)
		go func() {
			sc := bufio.NewScanner(outR)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for sc.Scan() {
				line := bytes.TrimSpace(sc.Bytes())
				m, err := jsonrpcframe.Parse(line)
				if err != nil {
					answered <- err
					return
				}
				if m.IsResponse() && m.ID.String() == `"fuzz-ping"` {
					answered <- nil
					return
				}
			}
			answered <- io.ErrUnexpectedEOF
		}()
		select {
		case err := <-answered:
			if err != nil {
				t.Errorf("input %q: the server wrote something that is not JSON-RPC, or stopped: %v", input, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("input %q: no answer to the ping that followed it", input)
		}
		inW.Close()
		<-conn.Done()
		conn.CancelAll()
		conn.Wait(5 * time.Second)
		conn.Close()
		outW.Close()
		outR.Close()
	})
}
