package testscripts

// BenchmarkHostMail: the figure of issue 43's mail to an agent on
// another host, through the binary: a mail appended to an idle agent's
// inbox until the model gets the request of the turn that delivers it,
// for a Codex agent on a host (the real Codex app-server on the loopback
// sshd) and the same agent here, interleaved.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// benchServe is a serve driven over its stdin and stdout, one request at
// a time.
type benchServe struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func startBenchServe(tb testing.TB, dir string, env []string, args ...string) *benchServe {
	tb.Helper()
	bin, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	stderr, err := os.Create(filepath.Join(dir, "serve.stderr"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &benchServe{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	tb.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		stderr.Close()
	})
	return s
}

// call sends a request and returns its result (or fails on its error),
// skipping what else serve writes.
func (s *benchServe) call(tb testing.TB, method string, params any) map[string]any {
	tb.Helper()
	s.next++
	id := s.next
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		tb.Fatal(err)
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			tb.Fatalf("serve's stdout ended: %v", err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" || *m.ID != id {
			continue
		}
		if m.Error != nil {
			tb.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
}

// tool calls a tool and returns its structured content.
func (s *benchServe) tool(tb testing.TB, name string, args map[string]any) map[string]any {
	tb.Helper()
	r := s.call(tb, "tools/call", map[string]any{"name": name, "arguments": args})
	sc, _ := r["structuredContent"].(map[string]any)
	return sc
}

// quantile is the p quantile of d (sorted in place).
func quantile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func BenchmarkHostMail(b *testing.B) {
	sshtest.Available(b)
	bin := realcodex.Bin(b, realcodex.AppServer)
	var mu sync.Mutex
	seen := map[string]time.Time{} // a mail's text → when the model got its turn's request
	mock, err := mockmodel.Start(mockmodel.Config{Handler: func(r *mockmodel.Request) mockmodel.Responder {
		if i := strings.Index(r.LastUserText, "bench-mail-"); i >= 0 {
			key := strings.Fields(r.LastUserText[i:])[0]
			mu.Lock()
			if _, ok := seen[key]; !ok {
				seen[key] = time.Now()
			}
			mu.Unlock()
		}
		return nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(b, mock.URL(), nil)
	srv := sshtest.Start(b, &sshtest.Options{Path: []string{filepath.Dir(bin)},
		Env: []string{"CODEX_HOME=" + home.Dir, "MOCK_API_KEY=sk-mock", "RUST_LOG=warn", realcodex.TagEnv + "=" + home.Dir}})
	dir := b.TempDir()
	team := filepath.Join(dir, ".claude", "teams", "dev")
	conf := filepath.Join(dir, ".config", "atm")
	for _, d := range []string{filepath.Join(team, "inboxes"), conf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	write := func(p, body string) {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(filepath.Join(team, "config.json"), `{"name":"dev","members":[{"name":"team-lead","agentId":"team-lead@dev"}]}`)
	write(filepath.Join(conf, "config.toml"), fmt.Sprintf("[plugins.atm-agent-mcp.hosts.box]\nssh = %q\nssh_args = [\"-F\", %q]\n", srv.Alias, srv.ClientConfig))
	var env []string
	for _, kv := range home.Env() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+dir, "ATM_HOME="+dir, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	s := startBenchServe(b, dir, env, "serve", "--team", "dev", "--identity", "team-lead", "--codex-bin", bin, "--backend", "app-server")
	s.call(b, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}})
	// Both agents work in a directory of the temporary directory, outside
	// any repository (the CODEX_HOME's work dir is in this checkout, whose
	// git Codex would read).
	remoteWork, localWork := filepath.Join(srv.Home, "work"), filepath.Join(dir, "work")
	for _, d := range []string{remoteWork, localWork} {
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	agents := []struct {
		identity string
		args     map[string]any
	}{
		{"far", map[string]any{"host": "box", "cwd": remoteWork}},
		{"near", map[string]any{"cwd": localWork}},
	}
	for _, a := range agents {
		args := map[string]any{"prompt": "hello", "identity": a.identity}
		for k, v := range a.args {
			args[k] = v
		}
		if sc := s.tool(b, "codex", args); sc["status"] != "completed" {
			b.Fatalf("the agent %s did not start: %v", a.identity, sc)
		}
	}
	atm, err := atmclient.New(atmclient.Config{Home: dir})
	if err != nil {
		b.Fatal(err)
	}
	// idle waits until identity's turn has ended and its mail is read.
	idle := func(identity string) {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			st := s.tool(b, "agent_sessions", map[string]any{})
			busy := false
			for _, row := range st["sessions"].([]any) {
				r := row.(map[string]any)
				if r["identity"] == identity && r["status"] != "idle" {
					busy = true
				}
			}
			if pc := s.tool(b, "atm_pending_count", map[string]any{"identity": identity}); !busy && pc["count"] == float64(0) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.Fatalf("%s did not become idle", identity)
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		order := agents
		if i%2 == 1 { // each first as often: the other's turn may still end meanwhile
			order = []struct {
				identity string
				args     map[string]any
			}{agents[1], agents[0]}
		}
		for _, a := range order {
			idle(agents[0].identity)
			idle(agents[1].identity)
			key := fmt.Sprintf("bench-mail-%s-%d", a.identity, i)
			start := time.Now()
			if _, err := atm.Send(context.Background(), atmclient.SendRequest{From: "team-lead", Team: "dev", To: a.identity, Text: key}); err != nil {
				b.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				mu.Lock()
				at, ok := seen[key]
				mu.Unlock()
				if ok {
					lat[a.identity] = append(lat[a.identity], at.Sub(start))
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("the model never got the turn of %s", key)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	b.StopTimer()
	far, near := lat["far"], lat["near"]
	b.ReportMetric(float64(quantile(far, 0.5).Microseconds())/1000, "host-p50-ms")
	b.ReportMetric(float64(quantile(far, 0.99).Microseconds())/1000, "host-p99-ms")
	b.ReportMetric(float64(quantile(near, 0.5).Microseconds())/1000, "local-p50-ms")
	b.ReportMetric(float64((quantile(far, 0.5)-quantile(near, 0.5)).Microseconds())/1000, "added-p50-ms")
	b.ReportMetric(0, "ns/op")
}
