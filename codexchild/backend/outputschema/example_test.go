package outputschema_test

import (
	"encoding/json"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
)

func Example() {
	s, err := outputschema.Compile(json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`))
	if err != nil {
		panic(err)
	}
	out, err := s.Check("```json\n{\"answer\": \"42\"}\n```")
	fmt.Println(string(out), err)
	_, err = s.Check(`{"answer": 42}`)
	fmt.Println(err != nil)
	// Output:
	// {"answer":"42"} <nil>
	// true
}
