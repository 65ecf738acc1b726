package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
)

// feedClient reads a serve's feed and keeps the latest state of each
// agent.
type feedClient struct {
	t      *testing.T
	conn   *feed.Conn
	frames chan feed.Frame
	agents map[string]feed.Agent
	mail   []feed.Mail
}

func dialFeed(t *testing.T, home string) *feedClient {
	t.Helper()
	recs, err := feed.Records(filepath.Join(home, ".config", "atm", "agent-sessions", "dev"))
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := recs["proxy"]
	if !ok {
		t.Fatalf("no feed record for the instance proxy: %v", recs)
	}
	if rec.Serve.Team != "dev" || rec.Serve.PID != os.Getpid() {
		t.Errorf("record %+v, want team dev and this process", rec)
	}
	conn, err := feed.Dial(context.Background(), rec.Socket)
	if err != nil {
		t.Fatal(err)
	}
	fc := &feedClient{t: t, conn: conn, frames: make(chan feed.Frame, 1024), agents: map[string]feed.Agent{}}
	go func() {
		defer close(fc.frames)
		for {
			fr, err := conn.Next()
			if err != nil {
				return
			}
			fc.frames <- fr
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return fc
}

// until reads frames until cond holds of what they told.
func (fc *feedClient) until(what string, cond func(fc *feedClient, fr feed.Frame) bool) feed.Frame {
	fc.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case fr, ok := <-fc.frames:
			if !ok {
				fc.t.Fatalf("the feed ended while waiting for %s", what)
			}
			fc.take(fr)
			if cond(fc, fr) {
				return fr
			}
		case <-deadline:
			fc.t.Fatalf("no %s within 10 s; agents %+v", what, fc.agents)
		}
	}
}

// take keeps what a frame tells.
func (fc *feedClient) take(fr feed.Frame) {
	switch fr.Type {
	case "snapshot":
		for _, a := range fr.Agents {
			fc.agents[a.Identity] = a
		}
		fc.mail = append(fc.mail, fr.MailList...)
	case "agent":
		fc.agents[fr.Agent.Identity] = *fr.Agent
	case "mail":
		fc.mail = append(fc.mail, *fr.Mail)
	}
}

func stateIs(identity, state string) func(*feedClient, feed.Frame) bool {
	return func(fc *feedClient, _ feed.Frame) bool { return fc.agents[identity].State == state }
}

// TestFeed: a serve's feed tells a client every agent's state as its
// turns start, wait for an approval and end; an approval answered on the
// feed goes to the same queue agent_respond answers (the first answer
// wins, a second is refused, the audit says where the answer came from);
// mail between members shows up; the stream ends when serve exits, after
// the sessions' closed states.
func TestFeed(t *testing.T) {
	c := startProxy(t, harnessOpts{modify: func(o *Options) { o.ApprovalFallback = "queue" }})
	c.initialize(false)
	fc := dialFeed(t, c.home)
	fc.until("the hello", func(_ *feedClient, fr feed.Frame) bool { return fr.Type == "hello" && fr.Serve.Instance == "proxy" })
	fc.until("the snapshot", func(_ *feedClient, fr feed.Frame) bool { return fr.Type == "snapshot" })

	// A turn that runs: working, on "thinking" since the turn started.
	c.structured(c.tool("codex", map[string]any{"prompt": "BLOCK", "identity": "arch", "background": true}))
	fc.until("arch working", stateIs("arch", feed.StateWorking))
	arch := fc.agents["arch"]
	if arch.Item == nil || arch.Item.Type != "thinking" || arch.TurnStarted == nil || arch.Kind != "codex" || len(arch.Spans) != 1 {
		t.Errorf("arch while working: %+v", arch)
	}

	// A turn that asks: waiting for the approval, which the feed answers.
	c.structured(c.tool("codex", map[string]any{"prompt": "APPROVE", "identity": "dev-1", "background": true}))
	fc.until("dev-1's approval", stateIs("dev-1", feed.StateApproval))
	dev := fc.agents["dev-1"]
	if len(dev.Approvals) != 1 || !strings.Contains(dev.Approvals[0].Question, "touch x") {
		t.Fatalf("dev-1's approvals: %+v", dev.Approvals)
	}
	answer := feed.Frame{Type: "answer", ID: 7, AgentID: dev.AgentID, ApprovalID: dev.Approvals[0].ID, Decision: "approve", From: "the view"}
	if err := fc.conn.Send(answer); err != nil {
		t.Fatal(err)
	}
	got := fc.until("the answer", func(_ *feedClient, fr feed.Frame) bool { return fr.Type == "answered" && fr.ID == 7 })
	if !got.OK {
		t.Fatalf("answer refused: %s", got.Error)
	}
	fc.until("dev-1 done", stateIs("dev-1", feed.StateWaitingMail))
	if last := fc.agents["dev-1"].Last; last == nil || last.Text != "decision: approve" || last.Status != "completed" {
		t.Errorf("dev-1's last result %+v", last)
	}
	if sp := fc.agents["dev-1"].Spans; len(sp) != 1 || sp[0].End.IsZero() || sp[0].Status != "completed" {
		t.Errorf("dev-1's turns %+v, want one that ended completed", sp)
	}
	// The same answer again: the approval is gone.
	answer.ID = 8
	if err := fc.conn.Send(answer); err != nil {
		t.Fatal(err)
	}
	got = fc.until("the second answer", func(_ *feedClient, fr feed.Frame) bool { return fr.Type == "answered" && fr.ID == 8 })
	if got.OK || !strings.Contains(got.Error, "no pending approval") {
		t.Errorf("a second answer: ok=%v %q, want refused", got.OK, got.Error)
	}
	audit, _ := os.ReadFile(filepath.Join(c.home, ".config", "atm", "agent-sessions", "dev", "audit.jsonl"))
	if !strings.Contains(string(audit), `"outcome":"approve by the view"`) {
		t.Errorf("the audit does not say the view answered:\n%s", audit)
	}

	// Mail between members.
	c.structured(c.tool("atm_send", map[string]any{"identity": "dev-1", "to": "arch", "message": "look at the build", "summary": "build"}))
	fc.until("the mail", func(fc *feedClient, _ feed.Frame) bool {
		for _, m := range fc.mail {
			if m.From == "dev-1" && m.To == "arch" && m.Summary == "build" {
				return true
			}
		}
		return false
	})

	// serve exits: the sessions close, then the stream ends.
	c.close()
	for fr := range fc.frames {
		fc.take(fr)
	}
	if got := fc.agents["arch"].State; got != feed.StateClosed {
		t.Errorf("arch at the end: %s, want closed", got)
	}
	if _, err := os.Stat(filepath.Join(c.home, ".config", "atm", "agent-sessions", "dev", "proxy", feed.RecordFile)); !os.IsNotExist(err) {
		t.Errorf("the feed record is left after serve exited: %v", err)
	}
}
