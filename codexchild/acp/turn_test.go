package acp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// eventLog collects the events OnEvent gets.
type eventLog struct {
	mu  sync.Mutex
	evs []acp.Event
}

func (l *eventLog) add(ev acp.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

// brief is an event in a few words, for comparisons.
type brief struct {
	Turn    int64
	Kind    acp.EventKind
	Text    string
	Tool    string
	Created bool
}

// of returns the events of a session's turn (turn -1: all turns).
func (l *eventLog) of(sid string, turn int64) []brief {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []brief
	for _, ev := range l.evs {
		if ev.SessionID != sid || (turn >= 0 && ev.Turn != turn) {
			continue
		}
		b := brief{Turn: ev.Turn, Kind: ev.Kind, Text: ev.Text}
		if ev.Tool != nil {
			b.Tool, b.Created = ev.Tool.ID+" "+ev.Tool.Status, ev.Tool.Created
		}
		out = append(out, b)
	}
	return out
}

// TestTwoTurns runs two turns on one session and checks what is folded
// into each result and what OnEvent saw, with and without messageIds.
func TestTwoTurns(t *testing.T) {
	turn1 := []string{"think pondering", "say Hello there", "tool t1 ls", "say All done", "plan", "usage 10 100"}
	turn2 := []string{"update-only mail1", "say second turn"}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"with messageId", nil},
		{"without messageId", []string{"FAKEACP_NO_MSGID=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := &eventLog{}
			cfg := fakeConfig(t, tc.env...)
			cfg.OnEvent = log.add
			c := start(t, cfg)
			if got, want := c.Info().Name, "fakeacp"; got != want {
				t.Errorf("agent name = %q, want %q", got, want)
			}
			s := newSession(t, c, acp.SessionParams{})

			got1 := prompt(t, s, turn1...)
			got2 := prompt(t, s, turn2...)
			ignore := cmpopts.IgnoreFields(acp.TurnResult{}, "Raw")
			rawIn := json.RawMessage(`{"command":"ls"}`)
			want1 := &acp.TurnResult{
				SessionID: s.ID(), Turn: 1, StopReason: acp.StopEndTurn,
				Text: "All done", Messages: []string{"Hello there", "All done"}, Thought: "pondering",
				ToolCalls: []acp.ToolCall{{ID: "t1", Title: "ls", Kind: "execute", Status: "completed", RawInput: rawIn, RawOutput: json.RawMessage(`"ok"`)}},
				Usage:     &acp.Usage{Used: 10, Size: 100},
			}
			want2 := &acp.TurnResult{
				SessionID: s.ID(), Turn: 2, StopReason: acp.StopEndTurn,
				Text: "second turn", Messages: []string{"second turn"},
				// Gemini's MCP tool: an update of a call never announced
				// creates it.
				ToolCalls: []acp.ToolCall{{ID: "mail1", Title: "send_team_mail", Status: "completed"}},
			}
			if diff := cmp.Diff(want1, got1, ignore); diff != "" {
				t.Errorf("turn 1 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want2, got2, ignore); diff != "" {
				t.Errorf("turn 2 (-want +got):\n%s", diff)
			}

			c.Close(t.Context())
			wantEv := []brief{
				{Turn: 2, Kind: acp.EventToolCall, Tool: "mail1 completed", Created: true},
				{Turn: 2, Kind: acp.EventMessage, Text: "secon"},
				{Turn: 2, Kind: acp.EventMessage, Text: "d turn"},
			}
			if diff := cmp.Diff(wantEv, log.of(s.ID(), 2)); diff != "" {
				t.Errorf("turn 2 events (-want +got):\n%s", diff)
			}
			var kinds []acp.EventKind
			for _, b := range log.of(s.ID(), 1) {
				if b.Kind == acp.EventCommands {
					continue // sent right after session/new's answer: turn 0 or 1
				}
				if len(kinds) == 0 || kinds[len(kinds)-1] != b.Kind {
					kinds = append(kinds, b.Kind)
				}
			}
			wantKinds := []acp.EventKind{acp.EventThought, acp.EventMessage, acp.EventToolCall, acp.EventMessage, acp.EventPlan, acp.EventUsage}
			if diff := cmp.Diff(wantKinds, kinds); diff != "" {
				t.Errorf("turn 1 event kinds (-want +got):\n%s", diff)
			}
			// available_commands_update, sent right after session/new's
			// answer, found its session.
			if got := log.of(s.ID(), -1); len(got) == 0 || got[0].Kind != acp.EventCommands {
				t.Errorf("events = %+v, want available_commands_update first", got)
			}
		})
	}
}

// TestLateUpdate: a chunk of turn 1's message that arrives after turn 1's
// answer (claude-agent-acp#551 is the same kind of thing) is not folded into
// turn 2, even when turn 2 has started.
func TestLateUpdate(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t))
	s := newSession(t, c, acp.SessionParams{})
	got1 := prompt(t, s, "say first", "late LATE")
	got2 := prompt(t, s, "say second")
	if got1.Text != "first" || got2.Text != "second" {
		t.Errorf("texts = %q, %q; want first, second", got1.Text, got2.Text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Status().LateUpdates < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := c.Status().LateUpdates; got < 1 {
		t.Errorf("LateUpdates = %d, want ≥ 1", got)
	}
}

// TestSlowConsumer: an OnEvent that blocks does not block the reader: the
// turn ends, the events that do not fit are dropped and counted.
func TestSlowConsumer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var got int
	var once sync.Once
	cfg := fakeConfig(t)
	cfg.EventBuffer = 4
	cfg.OnEvent = func(acp.Event) {
		once.Do(func() { <-release })
		got++
	}
	c := start(t, cfg)
	s := newSession(t, c, acp.SessionParams{})
	script := strings.Repeat("say word\n", 50)
	res := prompt(t, s, script)
	if len(res.Messages) != 50 {
		t.Errorf("messages = %d, want 50", len(res.Messages))
	}
	st := c.Status()
	close(release)
	if st.DroppedEvents == 0 {
		t.Errorf("DroppedEvents = 0, want some (buffer 4, 100 chunks)")
	}
	c.Close(t.Context())
	if int64(got)+st.DroppedEvents < 100 {
		t.Errorf("delivered %d + dropped %d < 100 chunks", got, st.DroppedEvents)
	}
}

// TestClientMethodsNotOffered: fs/* and terminal/* (not advertised) and
// any other method of the agent are answered -32601.
func TestClientMethodsNotOffered(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t))
	s := newSession(t, c, acp.SessionParams{})
	res := prompt(t, s, "call fs/read_text_file", "call terminal/create", "call _x/custom")
	want := []string{
		`fs/read_text_file answered {"code":-32601,"message":"method not found: fs/read_text_file"}`,
		`terminal/create answered {"code":-32601,"message":"method not found: terminal/create"}`,
		`_x/custom answered {"code":-32601,"message":"method not found: _x/custom"}`,
	}
	if diff := cmp.Diff(want, res.Messages); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}
