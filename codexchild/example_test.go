package codexchild_test

import (
	"context"
	"fmt"
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// A backend on a Codex binary (here mockcodex, which TestMain names in
// CODEXCHILD_EXAMPLE_BIN) runs a turn on a new thread and continues it.
func Example() {
	bin := os.Getenv("CODEXCHILD_EXAMPLE_BIN")
	b := codexchild.NewMCPServer(codexchild.Config{Bin: bin, Dir: os.TempDir()})
	defer b.Close(context.Background())

	ctx := context.Background()
	res, err := b.Turn(ctx, backend.TurnRequest{Prompt: "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text, res.Status)
	res, err = b.Turn(ctx, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "again"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text, res.Status)
	// Output:
	// MOCK_REPLY: hello completed
	// MOCK_REPLY: again completed
}
