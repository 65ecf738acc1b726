package testscripts

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// TestClientThatStopsReading: a client that asks for progress (as Claude
// Code does) and then stops reading stdout does not stop the proxy. While
// its pipe is full — a turn's flood of events, that turn's answer waiting
// to be written, another turn's progress — mail to another identity still
// drives turns to their end: the first mail's turn completes (else the
// second mail, which is delivered only to an idle session, would never be
// taken) and the second mail is taken too. Observed through the inbox and
// Codex's log, not stdout; at the end the client reads again and serve
// exits cleanly.
func TestClientThatStopsReading(t *testing.T) {
	for _, b := range []struct{ backend, version string }{{"mcp-server", testedMCPVersion}, {"app-server", testedAppVersion}} {
		t.Run(b.backend, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			writeTeamConfig(t, home, "dev", "team-lead", "arch", "qa", "dev-1", "dev-2", "dev-3", "proxy")
			childLog := filepath.Join(home, "child.jsonl")
			cmd := exec.Command("atm-agent-mcp", "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex",
				"--log-file", filepath.Join(home, "proxy.log"))
			cmd.Env = append(os.Environ(), "ATM_HOME="+home, "HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"),
				"GIT_CEILING_DIRECTORIES="+filepath.Dir(home), "MOCKCODEX_VERSION="+b.version, "MOCKCODEX_LOG="+childLog,
				"ATM_AGENT_MCP_MAIL_POLL_INTERVAL_MS=100")
			cmd.Dir = home
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			stuck := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() }) // a read that never ends fails instead
			defer stuck.Stop()
			c := &lineClient{t: t, w: jsonrpcframe.NewLineWriter(in), r: jsonrpcframe.NewLineReader(bufio.NewReader(out), nil)}
			c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
			c.call("tools/call", `{"name":"codex","arguments":{"prompt":"ready for mail","identity":"arch"}}`)

			// From here on the client does not read stdout. Four turns
			// answer with 500 deltas each (mockcodex streams one per rune):
			// more than the pipe and the event queue (1024) hold.
			flood := "EVENTS=600 " + strings.Repeat("flood ", 90)
			for _, who := range []string{"team-lead", "dev-1", "dev-2", "dev-3"} {
				c.send("tools/call", `{"name":"codex","arguments":{"prompt":"`+flood+who+`","identity":"`+who+`"},"_meta":{"progressToken":"`+who+`"}}`)
				waitFile(t, childLog, "flood "+who)
			}
			c.send("tools/call", `{"name":"codex","arguments":{"prompt":"second turn with progress","identity":"qa"},"_meta":{"progressToken":"qa"}}`)
			waitFile(t, childLog, "second turn with progress")

			// Mail from the team, one message after the other.
			c.send("tools/call", `{"name":"atm_send","arguments":{"identity":"proxy","to":"arch","message":"first mail"}}`)
			inbox := filepath.Join(home, ".claude", "teams", "dev", "inboxes", "arch.json")
			waitRead(t, inbox, "first mail")
			c.send("tools/call", `{"name":"atm_send","arguments":{"identity":"proxy","to":"arch","message":"second mail"}}`)
			waitRead(t, inbox, "second mail")
			waitFile(t, childLog, "second mail")

			// The pipe was full indeed: events were dropped.
			waitFile(t, filepath.Join(home, "proxy.log"), "the client reads slower than Codex writes")

			// The client reads again; serve ends cleanly.
			go func() { _, _ = io.Copy(io.Discard, out) }()
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("serve: %v", err)
			}
		})
	}
}

// waitFile waits until the file at path contains text.
func waitFile(t *testing.T, path, text string) {
	t.Helper()
	poll.Until(t, "'"+text+"' in "+filepath.Base(path), func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), text)
	})
}

// waitRead waits until the inbox at path holds a message with text marked
// read.
func waitRead(t *testing.T, path, text string) {
	t.Helper()
	poll.Until(t, "'"+text+"' marked read", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		var msgs []struct {
			Text string `json:"text"`
			Read bool   `json:"read"`
		}
		if json.Unmarshal(b, &msgs) != nil {
			return false
		}
		for _, m := range msgs {
			if m.Text == text && m.Read {
				return true
			}
		}
		return false
	})
}
