package mockmodel_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
)

// A Codex provider's base_url is Server.URL(); here a plain HTTP client plays
// Codex and asks for a namespaced MCP tool call.
func Example() {
	srv, err := mockmodel.Start(mockmodel.Config{
		Script: map[string]mockmodel.Responder{"GREET": mockmodel.Reply("hello, human")},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	body := `{"model":"mock-model","stream":true,"input":[
	  {"type":"message","role":"developer","content":[{"type":"input_text","text":"be brief"}]},
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"CALL_TOOL=mcp__atm.atm_send ARGS={\"to\":\"bob\"}"}]}]}`
	resp, err := http.Post(srv.URL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "event: ") {
			fmt.Println(line)
		} else if strings.Contains(line, `"response.output_item.done"`) {
			fmt.Println(line)
		}
	}
	r := srv.Requests()[0]
	fmt.Printf("last user text: %s\n", r.LastUserText)
	fmt.Println("saw the developer text:", srv.SawInput("be brief"))
	// Output:
	// event: response.created
	// event: response.output_item.added
	// event: response.function_call_arguments.delta
	// event: response.function_call_arguments.done
	// event: response.output_item.done
	// data: {"item":{"arguments":"{\"to\":\"bob\"}","call_id":"call_mock_1","id":"fc_mock_1","name":"atm_send","namespace":"mcp__atm","status":"completed","type":"function_call"},"output_index":0,"type":"response.output_item.done"}
	// event: response.completed
	// last user text: CALL_TOOL=mcp__atm.atm_send ARGS={"to":"bob"}
	// saw the developer text: true
}
