package atmclient_test

import (
	"context"
	"encoding/json"
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

// A Claude Code lead ends a teammate with a shutdown_request frame in a
// message's text; the teammate answers with a shutdown_response, and tells
// the lead its turn ended with an idle notification.
func ExampleMessage_Frame() {
	m := atmclient.Message{
		From: "team-lead",
		Text: `{"type":"shutdown_request","requestId":"shutdown-1@codex1","from":"team-lead","reason":"all done","timestamp":"2026-11-25T10:51:59.694Z"}`,
	}
	if f, ok := m.Frame(); ok && f.Type == atmclient.FrameShutdownRequest {
		fmt.Println(f.From, "asks", f.RequestID, "to stop:", f.Reason)
		fmt.Println(atmclient.ShutdownResponseText(f.RequestID, true, ""))
	}
	fmt.Println(atmclient.IdleNotification{
		From:      "codex1",
		Summary:   "review finished",
		Result:    "LGTM",
		Timestamp: time.Date(2026, 11, 25, 10, 52, 0, 0, time.UTC),
	}.Text())
	// Output:
	// team-lead asks shutdown-1@codex1 to stop: all done
	// {"type":"shutdown_response","request_id":"shutdown-1@codex1","approve":true}
	// {"type":"idle_notification","from":"codex1","timestamp":"2026-11-25T10:52:00.000Z","idleReason":"available","summary":"review finished","result":"LGTM"}
}

// A Codex agent joins the team of a Claude Code session, so that the
// lead's SendMessage reaches its inbox, and leaves when its session ends.
func ExampleClient_JoinTeam() {
	home, err := os.MkdirTemp("", "atm-home-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	dir := filepath.Join(home, ".claude", "teams", "session-c637aa76")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"name":"session-c637aa76","leadAgentId":"team-lead@session-c637aa76",
 "members":[{"agentId":"team-lead@session-c637aa76","name":"team-lead","agentType":"team-lead"}]}`), 0o600)

	c, err := atmclient.New(atmclient.Config{Home: home})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = c.JoinTeam(ctx, "session-c637aa76", atmclient.Member{
		Name:      "codex1", // AgentID defaults to codex1@session-c637aa76
		AgentType: "codex",
		Extra: map[string]json.RawMessage{
			"joinedAt":    json.RawMessage("1795603740000"),
			"cwd":         json.RawMessage(`"/work/repo"`),
			"backendType": json.RawMessage(`"atm-agent-mcp"`),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	fmt.Println(string(data))
	if err := c.LeaveTeam(ctx, "session-c637aa76", "codex1"); err != nil {
		log.Fatal(err)
	}
	team, _ := c.TeamConfig("session-c637aa76")
	fmt.Println("members after LeaveTeam:", len(team.Members))
	// Output:
	// {
	//   "name": "session-c637aa76",
	//   "leadAgentId": "team-lead@session-c637aa76",
	//   "members": [
	//     {
	//       "agentId": "team-lead@session-c637aa76",
	//       "name": "team-lead",
	//       "agentType": "team-lead"
	//     },
	//     {
	//       "agentId": "codex1@session-c637aa76",
	//       "name": "codex1",
	//       "agentType": "codex",
	//       "backendType": "atm-agent-mcp",
	//       "cwd": "/work/repo",
	//       "joinedAt": 1795603740000
	//     }
	//   ]
	// }
	// members after LeaveTeam: 1
}
