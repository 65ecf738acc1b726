package acp_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// BenchmarkParseUpdate is the parser every session/update goes through
// (a tool_call_update as claude-agent-acp sends it).
func BenchmarkParseUpdate(b *testing.B) {
	params := json.RawMessage(`{"sessionId":"5476a6dc-0249-4807-b8f3-c70454546e18","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_2_0","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"acp-approved","content":[{"type":"content","content":{"type":"text","text":"acp-approved"}}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := acp.ParseUpdate(params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseChunk is BenchmarkParseUpdate for the update an agent
// streams most, a message chunk (ParseUpdate's fast path).
func BenchmarkParseChunk(b *testing.B) {
	params := json.RawMessage(`{"sessionId":"mock-0123456789abcdef","update":{"content":{"text":"po","type":"text"},"messageId":"m-1","sessionUpdate":"agent_message_chunk"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := acp.ParseUpdate(params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnUpdates runs turns of 1000 message chunks through the fake
// agent: the reader's cost per update (parse, fold, queue for OnEvent),
// with the fake agent's own cost included.
func BenchmarkTurnUpdates(b *testing.B) {
	cfg := acp.Config{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{"FAKEACP=1", "FAKEACP_NO_MSGID=1"},
		OnEvent: func(acp.Event) {}, StopGrace: 500 * time.Millisecond}
	c, err := acp.Start(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(b.Context())
	s, err := c.NewSession(b.Context(), acp.SessionParams{Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	script := strings.Repeat("say chunk\n", 500) // two chunks each
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Prompt(b.Context(), acp.TurnRequest{Text: script}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/update")
}
