package acpbackend

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/testlog"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockacp"
)

// The test binary runs as the mock ACP agent under the name "mockacp" and
// as a small stdio MCP server under "mockmcp" (links made by acpAgent).
func init() {
	switch filepath.Base(os.Args[0]) {
	case "mockacp":
		os.Exit(mockacp.Main())
	case "mockmcp":
		os.Exit(mockMCPMain())
	}
}

// acpEnv is a test's mock agent: links to this test binary, its state
// directory, and the mark its processes carry.
type acpEnv struct {
	agent, mcp string // the mockacp and mockmcp links
	state      string // MOCKACP_STATE
	mcpLog     string // where mockmcp appends the tool calls
	mark       string
}

// newACPEnv makes the links and, at cleanup (after the backends closed:
// call it first), checks that no goroutine of the backend and no process
// of the test's agents is left.
func newACPEnv(t *testing.T) *acpEnv {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &acpEnv{agent: filepath.Join(dir, "mockacp"), mcp: filepath.Join(dir, "mockmcp"),
		state: filepath.Join(dir, "state"), mcpLog: filepath.Join(dir, "mcp.log")}
	for _, l := range []string{e.agent, e.mcp} {
		if err := os.Symlink(exe, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	m := make([]byte, 8)
	rand.Read(m)
	e.mark = hex.EncodeToString(m)
	t.Cleanup(func() { noMarkedProcessLeft(t, e.mark) })
	checkNoLeaks(t, nil) // after the backends are closed, before the processes are looked for
	return e
}

// config is an Config for the mock agent with env added.
func (e *acpEnv) config(t *testing.T, env ...string) Config {
	return Config{
		Name:    "mock",
		Command: e.agent,
		Env:     append([]string{"MOCKACP_STATE=" + e.state, "ACPTEST_MARK=" + e.mark}, env...),
		Mode:    "default",
		Logger:  acpLogger(t),
		// A loaded machine: room for the cancel, a short grace.
		CancelTimeout: 5 * time.Second,
		StopGrace:     300 * time.Millisecond,
	}
}

// backend returns a backend for cfg, closed at the end of the test.
func (e *acpEnv) backend(t *testing.T, cfg Config) *Backend {
	b := New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Logf("Close: %v", err)
		}
	})
	return b
}

// params are thread parameters with instructions and the mockmcp server
// as "atm".
func (e *acpEnv) params(t *testing.T) backend.ThreadParams {
	return backend.ThreadParams{
		Cwd:                   t.TempDir(),
		Model:                 "mock-large",
		BaseInstructions:      "BASE INSTRUCTIONS",
		DeveloperInstructions: "DEVELOPER INSTRUCTIONS",
		ToolServers: []backend.ToolServer{{Name: "atm", Command: e.mcp, Args: []string{"--agent", "m1"},
			Env: map[string]string{"MOCKMCP_LOG": e.mcpLog, "ACPTEST_MARK": e.mark}}},
	}
}

// acpRecorder is a Handler (and Flusher) that keeps what it gets and answers
// approvals with the decisions given, in order (the last one repeated).
type acpRecorder struct {
	mu        sync.Mutex
	events    []backend.Event
	approvals []*backend.Approval
	decisions []backend.Decision
	flushes   int
	// seen receives each message text as it arrives (buffered; dropped
	// when full).
	seen chan string
}

func newACPRecorder(decisions ...backend.Decision) *acpRecorder {
	return &acpRecorder{decisions: decisions, seen: make(chan string, 64)}
}

func (r *acpRecorder) Event(e backend.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if e.Neutral != nil && e.Type == "agent_message_chunk" {
		var u struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(e.Params, &u)
		select {
		case r.seen <- u.Content.Text:
		default:
		}
	}
}

func (r *acpRecorder) Approval(a *backend.Approval) {
	r.mu.Lock()
	r.approvals = append(r.approvals, a)
	n := len(r.approvals)
	var d backend.Decision
	if len(r.decisions) > 0 {
		d = r.decisions[min(n, len(r.decisions))-1]
	}
	r.mu.Unlock()
	if d.Kind != "" {
		go a.Respond(d) // from another goroutine, as a bridge does
	}
}

func (r *acpRecorder) Flush() {
	r.mu.Lock()
	r.flushes++
	r.mu.Unlock()
}

// activities returns the kinds of the activities seen, in order, without
// ActivityNone.
func (r *acpRecorder) activities() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Neutral == nil {
			out = append(out, "nil:"+e.Type)
			continue
		}
		switch a := e.Neutral; a.Kind {
		case backend.ActivityNone:
		case backend.ActivityItem:
			out = append(out, fmt.Sprintf("item %s %s %s %q started=%v", a.Item.ID, a.Item.Type, a.Item.Status, a.Item.Summary, a.Item.Started))
		case backend.ActivityMessage:
			out = append(out, "message "+a.Text)
		case backend.ActivityTurnStarted:
			out = append(out, string(a.Kind)+" "+a.Summary+"model="+a.Model)
		default:
			out = append(out, string(a.Kind)+" "+a.Summary)
		}
	}
	return out
}

// turn runs a turn that must not fail.
func acpTurnOK(t *testing.T, b *Backend, req backend.TurnRequest) *backend.Result {
	t.Helper()
	if req.Timeout == 0 {
		req.Timeout = 60 * time.Second
	}
	res, err := b.Turn(context.Background(), req)
	if err != nil {
		t.Fatalf("Turn %q: %v", req.Prompt, err)
	}
	return res
}

// acpLogger keeps the log in memory and shows it when the test fails (or
// with ACPLOG set).
func acpLogger(t *testing.T) *slog.Logger { return testlog.Logger(t, "ACPLOG") }

// noMarkedProcessLeft fails the test when a live process (not a zombie)
// has ACPTEST_MARK=mark in its environment a moment after the test.
func noMarkedProcessLeft(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(env, []byte("ACPTEST_MARK="+mark+"\x00")) {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
			pids = append(pids, pid)
		}
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of the agent left behind: %v", pids)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mockMCPMain is a stdio MCP server with one tool, atm_send, that
// appends its arguments (and its own --agent argument) to $MOCKMCP_LOG and
// answers "sent as AGENT: ARGS".
func mockMCPMain() int {
	agent := ""
	for i, a := range os.Args {
		if a == "--agent" && i+1 < len(os.Args) {
			agent = os.Args[i+1]
		}
	}
	sc := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var res any
		switch m.Method {
		case "initialize":
			res = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "mockmcp", "version": "1"}}
		case "tools/list":
			res = map[string]any{"tools": []any{map[string]any{"name": "atm_send", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			if m.Params.Name != "atm_send" {
				res = map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no tool " + m.Params.Name}}}
				break
			}
			line := fmt.Sprintf("%s %s\n", agent, m.Params.Arguments)
			if f, err := os.OpenFile(os.Getenv("MOCKMCP_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
				f.WriteString(line)
				f.Close()
			}
			res = map[string]any{"content": []any{map[string]any{"type": "text", "text": "sent as " + agent + ": " + strings.TrimSpace(string(m.Params.Arguments))}}}
		default:
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			continue
		}
		out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
	}
	return 0
}
