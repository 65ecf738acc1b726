package mockcodex

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestRecordedAsReal asks the pinned real Codex CLIs (make test installs
// them; skipped otherwise) what recorded.go copies from them, and compares
// mockcodex's answer: the unknown-method error of codex app-server (its
// list of methods) and the tools/list result of codex mcp-server. A new
// pinned Codex whose answers changed fails here until recorded.go is
// recorded again from it.
func TestRecordedAsReal(t *testing.T) {
	for _, tt := range []struct {
		which realcodex.Which
		lines []string
		id    float64 // the answer compared
		field string  // its member compared
	}{
		{realcodex.AppServer, []string{
			`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"probe","title":"Probe","version":"0.0.1"}}}`,
			`{"method":"initialized"}`,
			`{"id":2,"method":"no/such/method","params":{}}`,
		}, 2, "error"},
		{realcodex.MCPServer, []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"0.0.1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		}, 2, "result"},
	} {
		t.Run(tt.which.String(), func(t *testing.T) {
			t.Parallel()
			bin := realcodex.Bin(t, tt.which)
			h := realcodex.NewHome(t, "http://127.0.0.1:9/v1", nil)
			p := realcodex.Start(t, h, bin, tt.which.Subcommand())
			for _, l := range tt.lines {
				if _, err := fmt.Fprintln(p.Stdin, l); err != nil {
					t.Fatalf("write to codex: %v", err)
				}
			}
			fromReal := realAnswer(t, p, tt.id)

			c := start(t, testEnv(t), tt.which.Subcommand())
			for _, l := range tt.lines {
				c.send(l)
			}
			_, mock := c.response(tt.id)
			if diff := cmp.Diff(fromReal[tt.field], mock[tt.field]); diff != "" {
				t.Errorf("%s of the answer to request %v (-real %s +mockcodex):\n%s\nrecord it again into recorded.go",
					tt.field, tt.id, tt.which.EnvVar(), diff)
			}
		})
	}
}

// realAnswer reads the real Codex's stdout up to the answer with the id.
func realAnswer(t *testing.T, p *realcodex.Process, id float64) msg {
	t.Helper()
	got := make(chan msg, 1)
	go func() {
		defer close(got)
		for {
			line, err := p.Stdout.ReadString('\n')
			var m msg
			if json.Unmarshal([]byte(strings.TrimSpace(line)), &m) == nil && m["id"] == id && m["method"] == nil {
				got <- m
				return
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case m, ok := <-got:
		if !ok {
			t.Fatalf("codex ended its output without answering request %v", id)
		}
		return m
	case <-time.After(60 * time.Second):
		t.Fatalf("codex did not answer request %v in 60s", id)
		return nil
	}
}
