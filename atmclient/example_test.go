package atmclient_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

func Example() {
	home, err := os.MkdirTemp("", "atm-home-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	// A team "dev" with two members, as Claude Code creates it.
	dir := filepath.Join(home, ".claude", "teams", "dev")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{
  "name": "dev",
  "leadAgentId": "team-lead@dev",
  "members": [
    {"agentId": "team-lead@dev", "name": "team-lead"},
    {"agentId": "arch-ctm@dev", "name": "arch-ctm"}
  ]
}`), 0o600)

	c, err := atmclient.New(atmclient.Config{
		Home: home,
		Now:  func() time.Time { return time.Date(2026, 3, 18, 20, 21, 33, 0, time.UTC) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Send(ctx, atmclient.SendRequest{
		From: "team-lead", Team: "dev", To: "arch-ctm", Text: "Please review <PR #12> & merge.",
	}); err != nil {
		log.Fatal(err)
	}

	res, err := c.Read(ctx, "dev", "arch-ctm", atmclient.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Messages {
		fmt.Printf("%s at %s: %s\n", m.From, m.Timestamp, m.Text)
		if _, err := c.MarkRead(ctx, "dev", "arch-ctm", m.Key()); err != nil {
			log.Fatal(err)
		}
	}
	n, err := c.Pending(ctx, "dev", "arch-ctm")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending:", n)
	// Output:
	// team-lead at 2026-03-18T20:21:33.000000000Z: Please review <PR #12> & merge.
	// pending: 0
}
