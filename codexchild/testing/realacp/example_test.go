package realacp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// A scripted Anthropic Messages API of one's own: ReadAnthropic reads the
// request, WriteAnthropic answers with the model's blocks (here whole; a
// streaming request gets the same blocks as SSE events).
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, ok := realacp.ReadAnthropic(w, r)
		if !ok {
			return
		}
		realacp.WriteAnthropic(w, req.Stream, []realacp.AnthropicBlock{
			{Tool: "Bash", Input: map[string]any{"command": "go test ./..."}},
		}, "1")
	}))
	defer srv.Close()

	res, err := http.Post(srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"stream":false,"messages":[{"role":"user","content":"run the tests"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(string(body))

	res, err = http.Get(srv.URL + "/v1/models")
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Body.Close()
	fmt.Println(res.StatusCode)
	// Output:
	// {"content":[{"id":"toolu_1_0","input":{"command":"go test ./..."},"name":"Bash","type":"tool_use"}],"id":"msg_mock_1","model":"claude-mock","role":"assistant","stop_reason":"tool_use","stop_sequence":null,"type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":10,"output_tokens":10}}
	// 404
}
