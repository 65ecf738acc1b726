package acp_test

import (
	"context"
	"fmt"
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// An agent (here the fake agent of the tests, which reads its prompt as a
// script) runs a turn in a new session.
func Example() {
	ctx := context.Background()
	c, err := acp.Start(ctx, acp.Config{
		Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{"FAKEACP=1"},
		Asker: acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
			fmt.Println("asked about", req.Tool.Title)
			return acp.AllowOnce
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	s, err := c.NewSession(ctx, acp.SessionParams{Cwd: os.TempDir(), Mode: "default"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := s.Prompt(ctx, acp.TurnRequest{Text: "say Hello\nask t1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Messages, res.StopReason)
	// Output:
	// asked about run t1
	// [Hello selected allow-once] end_turn
}
