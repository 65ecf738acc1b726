package testscripts

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// BenchmarkSteerMailThroughServe is issue 42's measure of mail that steers
// a busy agent, end to end: serve (the binary) runs a session on the real
// Codex (the pinned app-server) whose turn has its model request in
// flight on the mock model (SLOW=60); each iteration writes a mail from
// the lead (serve's identity) into the agent's inbox as any writer does
// (atmclient, under the inbox's lock) and waits until the mock model gets
// Codex's next request carrying it. On the way: serve's inbox watch, the
// mail bridge, the session's steer, Codex's turn/steer. Each mail is slow
// again, so the turn stays busy from one iteration to the next. Reports
// the latency's p50 and p90 (the goal: p50 under 1 s; queued, the mail
// would wait for the rest of the turn).
func BenchmarkSteerMailThroughServe(b *testing.B) {
	bin := realcodex.Bin(b, realcodex.AppServer)
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(b, mock.URL(), nil)
	atmHome := b.TempDir()
	team := filepath.Join(atmHome, ".claude", "teams", "dev")
	if err := os.MkdirAll(filepath.Join(team, "inboxes"), 0o755); err != nil {
		b.Fatal(err)
	}
	members, _ := json.Marshal(map[string]any{"name": "dev", "members": []map[string]string{
		{"name": "proxy", "agentId": "proxy@dev"}, {"name": "arch", "agentId": "arch@dev"}}})
	if err := os.WriteFile(filepath.Join(team, "config.json"), members, 0o644); err != nil {
		b.Fatal(err)
	}
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(proxy, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", bin, "--backend", "app-server",
		"--log-file", filepath.Join(atmHome, "serve.log"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + atmHome, "ATM_HOME=" + atmHome, "TMPDIR=" + os.TempDir(), "GIT_CEILING_DIRECTORIES=" + home.Dir}
	for _, kv := range home.Env() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "CODEX_HOME", "MOCK_API_KEY", "RUST_LOG", realcodex.TagEnv:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	c := startBenchClient(b, cmd)
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}})
	start := c.call("tools/call", map[string]any{"name": "codex", "arguments": map[string]any{
		"identity": "arch", "prompt": "SLOW=60 a long task", "cwd": home.WorkDir, "background": true}})
	var started struct {
		StructuredContent struct {
			AgentID string `json:"agent_id"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(start, &started); err != nil || started.StructuredContent.AgentID == "" {
		b.Fatalf("codex: %s (%v)", start, err)
	}
	ctx := context.Background()
	waitCtx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	if _, err := mock.WaitRequests(waitCtx, 1); err != nil {
		b.Fatal(err)
	}
	atm, err := atmclient.New(atmclient.Config{Home: atmHome})
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		text := fmt.Sprintf("SLOW=60 mail %d", i)
		n := len(mock.Requests())
		t0 := time.Now()
		if _, err := atm.Send(ctx, atmclient.SendRequest{From: "proxy", Team: "dev", To: "arch", Text: text}); err != nil {
			b.Fatal(err)
		}
		for seen := false; !seen; {
			reqs, err := mock.WaitRequests(waitCtx, n+1)
			if err != nil {
				b.Fatalf("mail %d never reached the model: %v", i, err)
			}
			for _, r := range reqs[n:] {
				seen = seen || strings.Contains(r.LastUserText, text)
			}
			n = len(reqs)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	c.call("tools/call", map[string]any{"name": "agent_interrupt", "arguments": map[string]any{"agent_id": started.StructuredContent.AgentID}})
	c.close()
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[(len(lat)-1)*p/100].Microseconds()) / 1000 }
	b.ReportMetric(pct(50), "p50-ms")
	b.ReportMetric(pct(90), "p90-ms")
}

// benchClient speaks newline-delimited JSON-RPC to a started program: one
// request at a time, notifications skipped.
type benchClient struct {
	tb    testing.TB
	cmd   *exec.Cmd
	stdin interface{ Write([]byte) (int, error) }
	mu    sync.Mutex
	resp  map[string]chan json.RawMessage
	next  int
	done  chan struct{}
}

func startBenchClient(tb testing.TB, cmd *exec.Cmd) *benchClient {
	tb.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &benchClient{tb: tb, cmd: cmd, stdin: stdin, resp: map[string]chan json.RawMessage{}, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method != "" || len(m.ID) == 0 {
				continue
			}
			c.mu.Lock()
			ch := c.resp[string(m.ID)]
			c.mu.Unlock()
			if ch != nil {
				if len(m.Error) > 0 {
					ch <- append(json.RawMessage(`{"error":`), append(m.Error, '}')...)
				} else {
					ch <- m.Result
				}
			}
		}
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// call sends a request and returns its result; an error response fails
// the benchmark.
func (c *benchClient) call(method string, params any) json.RawMessage {
	c.tb.Helper()
	c.mu.Lock()
	c.next++
	id := fmt.Sprint(c.next)
	ch := make(chan json.RawMessage, 1)
	c.resp[id] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.tb.Fatal(err)
	}
	select {
	case r := <-ch:
		if strings.HasPrefix(string(r), `{"error":`) {
			c.tb.Fatalf("%s: %s", method, r)
		}
		return r
	case <-time.After(120 * time.Second):
		c.tb.Fatalf("%s: no answer", method)
	case <-c.done:
		c.tb.Fatalf("%s: serve exited", method)
	}
	return nil
}

// close ends the program's input and waits for it to exit.
func (c *benchClient) close() {
	if cl, ok := c.stdin.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.tb.Error("serve did not exit within 30 s of its input's end")
	}
}
