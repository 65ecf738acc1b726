package testscripts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// killMoment is a moment of serve's life at which it is killed.
type killMoment struct {
	name   string
	prompt string // the turn in flight when serve is killed ("" = none)
	wait   string // "started" (the turn's first event), "approval" (the elicitation), "file:PATH" (PATH exists), "random" (0–delay), or "" for none
	delay  time.Duration
}

// TestNoOrphansWhenServeIsKilled: serve killed with SIGKILL at some moment
// of its life — idle after a turn, in the middle of a turn that hangs, while
// an approval waits for the client, at a random moment of a turn — leaves
// nothing of its Codex tree running 2 s later: not the guard, not Codex,
// not the per-thread tools servers. mockcodex is told to outlive stdin EOF,
// as codex mcp-server does mid-turn, so that only the guard can end it.
func TestNoOrphansWhenServeIsKilled(t *testing.T) {
	moments := []killMoment{
		{name: "idle after a turn"},
		{name: "mid-turn", prompt: "HANG", wait: "started"},
		{name: "approval pending", prompt: "RUN_SHELL ESCALATE CMD=echo hi", wait: "approval"},
	}
	for i := range 3 {
		moments = append(moments, killMoment{name: fmt.Sprint("random moment ", i+1), prompt: "RUN_SHELL CMD=sleep 0.2", wait: "random", delay: 300 * time.Millisecond})
	}
	for _, b := range []struct{ backend, version string }{{"mcp-server", testedMCPVersion}, {"app-server", testedAppVersion}} {
		for _, m := range moments {
			t.Run(b.backend+"/"+m.name, func(t *testing.T) {
				home := t.TempDir()
				killServe(t, m, home, home, "mockcodex", b.backend,
					"HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"), "MOCKCODEX_VERSION="+b.version, "MOCKCODEX_EOF=linger")
			})
		}
	}
}

// TestNoOrphansWithRealCodex is the same with the real Codex CLIs (their
// node wrapper, the native binary, its shells and the tools servers it
// starts) and the loopback model.
func TestNoOrphansWithRealCodex(t *testing.T) {
	for _, tc := range []struct {
		which   realcodex.Which
		backend string
	}{{realcodex.MCPServer, "mcp-server"}, {realcodex.AppServer, "app-server"}} {
		t.Run(tc.backend, func(t *testing.T) {
			bin := realcodex.Bin(t, tc.which)
			mock, err := mockmodel.Start(mockmodel.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mock.Close() })
			moments := []killMoment{
				{name: "idle after a turn"},
				{name: "mid-turn", prompt: "SLOW=30 then answer", wait: "started"},
				{name: "approval pending", prompt: "RUN_SHELL ESCALATE CMD=echo hi", wait: "approval"},
			}
			for i := range 3 {
				moments = append(moments, killMoment{name: fmt.Sprint("random moment ", i+1), prompt: "RUN_SHELL CMD=sleep 1", wait: "random", delay: 2 * time.Second})
			}
			for _, m := range moments {
				t.Run(m.name, func(t *testing.T) {
					h := realcodex.NewHome(t, mock.URL(), nil)
					killServe(t, m, t.TempDir(), h.WorkDir, bin, tc.backend, h.Env()...)
				})
			}
		})
	}
}

// killServe runs serve (ATM home atmHome, threads in cwd) on codexBin with
// env added, brings it to moment m, kills it with SIGKILL and fails when
// any process that shares serve's HOME is still running 2 s later.
func killServe(t *testing.T, m killMoment, atmHome, cwd, codexBin, backend string, env ...string) {
	t.Helper()
	killServeWith(t, m, atmHome, cwd, []string{"--codex-bin", codexBin, "--backend", backend, "--approval-policy", "on-request"}, "", env...)
}

// killServeWith is killServe with serve's own arguments after --team and
// --identity, and its sessions started by agent_start of agent (by the
// codex tool for "").
func killServeWith(t *testing.T, m killMoment, atmHome, cwd string, serveArgs []string, agent string, env ...string) {
	t.Helper()
	writeTeamConfig(t, atmHome, "dev", "team-lead", "arch")
	cmd := exec.Command("atm-agent-mcp", append([]string{"serve", "--team", "dev", "--identity", "proxy"}, serveArgs...)...)
	cmd.Env = append(append(os.Environ(), "ATM_HOME="+atmHome, "GIT_CEILING_DIRECTORIES="+filepath.Dir(atmHome)), env...)
	cmd.Dir = cwd
	var home string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v // the last one wins, as in the process
		}
	}
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
	stuck := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() }) // a read that never ends fails instead
	defer stuck.Stop()
	c := &lineClient{t: t, w: jsonrpcframe.NewLineWriter(in), r: jsonrpcframe.NewLineReader(bufio.NewReader(out), nil)}
	c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}`)
	tool, kind := "codex", ""
	if agent != "" {
		tool, kind = "agent_start", `"agent":"`+agent+`",`
	}
	c.call("tools/call", `{"name":"`+tool+`","arguments":{`+kind+`"prompt":"start","identity":"arch","cwd":"`+cwd+`"}}`)
	if m.prompt != "" {
		c.send("tools/call", `{"name":"`+tool+`","arguments":{`+kind+`"prompt":"`+m.prompt+`","identity":"team-lead","cwd":"`+cwd+`"}}`)
		switch m.wait {
		case "random":
			time.Sleep(time.Duration(rand.Int64N(int64(m.delay))))
		case "started", "approval":
			c.until(m.wait)
		default:
			path, ok := strings.CutPrefix(m.wait, "file:")
			if !ok {
				t.Fatalf("unknown wait %q", m.wait)
			}
			poll.Until(t, path+" to be written", func() bool { _, err := os.Stat(path); return err == nil })
		}
	}
	if n := len(survivors(home)); n < 3 {
		t.Fatalf("only %d processes of the run before the kill; want serve, the guard and the agent at least", n)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(2 * time.Second)
	left := survivors(home)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		left = survivors(home)
	}
	if len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("2 s after serve was killed, %d process(es) of its tree still run: %s", len(left), describe(left))
	}
}

// survivors returns the pids of the processes whose environment has
// HOME=home.
func survivors(home string) []int {
	entries, _ := os.ReadDir("/proc")
	want := []byte("HOME=" + home + "\x00")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && dying(stat) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// pfExiting is the kernel's PF_EXITING task flag: the process is being
// torn down and runs no more user code.
const pfExiting = 0x4

// dying reports whether a /proc/<pid>/stat line is a zombie's (dead,
// waiting for its parent) or a process's that is exiting: a large node
// process killed on a busy machine can take a while to release its memory,
// and meanwhile it is neither a zombie nor alive (measured: its cmdline
// already reads empty).
func dying(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(stat[i+1:])) // state ppid pgrp session tty_nr tpgid flags ...
	if len(f) < 7 {
		return false
	}
	if f[0] == "Z" || f[0] == "X" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfExiting != 0
}

// describe names processes by their command lines.
func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		parts = append(parts, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(strings.TrimRight(string(cl), "\x00"), "\x00", " ")))
	}
	return strings.Join(parts, "; ")
}

// writeTeamConfig creates a team config with the given members.
func writeTeamConfig(t *testing.T, home, team string, members ...string) {
	t.Helper()
	dir := filepath.Join(home, ".claude", "teams", team)
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o755); err != nil {
		t.Fatal(err)
	}
	var ms []map[string]any
	for _, m := range members {
		ms = append(ms, map[string]any{"agentId": m + "@" + team, "name": m, "agentType": "general-purpose", "joinedAt": 1})
	}
	b, _ := json.Marshal(map[string]any{"name": team, "createdAt": 1, "leadAgentId": "team-lead@" + team, "members": ms})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineClient is a minimal MCP client over NDJSON pipes; it answers no
// server request (an approval stays pending).
type lineClient struct {
	t    *testing.T
	w    jsonrpcframe.Writer
	r    jsonrpcframe.Reader
	next int64
}

func (c *lineClient) send(method, params string) jsonrpcframe.ID {
	c.t.Helper()
	c.next++
	id := jsonrpcframe.IntID(c.next)
	if err := c.w.Write(&jsonrpcframe.Message{Versioned: true, ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
		c.t.Fatal(err)
	}
	return id
}

// call sends a request and reads until its response.
func (c *lineClient) call(method, params string) *jsonrpcframe.Message {
	c.t.Helper()
	id := c.send(method, params)
	for {
		m, err := c.r.Read()
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		if m.IsResponse() && m.ID == id {
			if m.Error != nil {
				c.t.Fatalf("%s: %s", method, m.Error)
			}
			return m
		}
	}
}

// until reads until a codex/event of the given type, or a server request
// named so (elicitation/create for an approval).
func (c *lineClient) until(typ string) {
	c.t.Helper()
	for {
		m, err := c.r.Read()
		if err != nil {
			c.t.Fatalf("waiting for %s: %v", typ, err)
		}
		if typ == "started" && (bytes.Contains(m.Params, []byte(`"task_started"`)) || bytes.Contains(m.Params, []byte(`"turn/started"`)) ||
			bytes.Contains(m.Params, []byte(`"sessionUpdate"`))) ||
			typ == "approval" && m.IsRequest() && m.Method == "elicitation/create" {
			return
		}
	}
}

// TestNoOrphansWithACPAgents is the same for agents of other kinds, each
// session's agent started through the guard: mockacp (idle, mid-turn,
// with an approval pending, and with a child that ignores SIGTERM and the
// end of its stdin, as Gemini's relaunched copy of itself), and the real
// claude-agent-acp on the Anthropic mock (idle, with its model request
// hanging).
func TestNoOrphansWithACPAgents(t *testing.T) {
	t.Run("mockacp", func(t *testing.T) {
		for _, m := range []killMoment{
			{name: "idle after a turn"},
			{name: "mid-turn", prompt: `say working\nhang`, wait: "started"},
			{name: "approval pending", prompt: `ask a1 execute rm -rf build`, wait: "approval"},
			{name: "a child that ignores SIGTERM", prompt: `spawn KIDPID\nsay spawned\nhang`, wait: "file:KIDPID"}, // written once the child runs
		} {
			t.Run(m.name, func(t *testing.T) {
				home := t.TempDir()
				m.prompt = strings.ReplaceAll(m.prompt, "KIDPID", filepath.Join(home, "kid.pid"))
				m.wait = strings.ReplaceAll(m.wait, "KIDPID", filepath.Join(home, "kid.pid"))
				writeAgentConfig(t, home, "[plugins.atm-agent-mcp.agents.mock]\ncommand = \"mockacp\"\nmode = \"default\"\n")
				killServeWith(t, m, home, home, []string{"--codex-bin", "mockcodex"}, "mock", "HOME="+home)
				if strings.Contains(m.prompt, "spawn") {
					if _, err := os.Stat(filepath.Join(home, "kid.pid")); err != nil {
						t.Errorf("the agent's child was never started: %v", err)
					}
				}
			})
		}
	})
	t.Run("claude", func(t *testing.T) {
		bin := realacp.Install(t, "claude-agent-acp", "node_modules/.bin/claude-agent-acp")
		mock := realacp.StartAnthropic(t)
		for _, m := range []killMoment{
			{name: "idle after a turn"},
			{name: "model request hanging", prompt: "TURN TWO: HANG", wait: "started"},
		} {
			t.Run(m.name, func(t *testing.T) {
				home := t.TempDir()
				env := []string{"HOME=" + home}
				for k, v := range claudeAgentEnv(bin, home, mock.URL()) {
					env = append(env, k+"="+v)
				}
				killServeWith(t, m, home, home, []string{"--codex-bin", "mockcodex"}, "claude", env...)
			})
		}
	})
}

// writeAgentConfig writes home's ~/.config/atm/config.toml.
func writeAgentConfig(t *testing.T, home, toml string) {
	t.Helper()
	dir := filepath.Join(home, ".config", "atm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDying(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want bool
	}{
		{"8453 (node) S 1 8453 8453 0 -1 4194560 2718 0 0 0", false},
		{"8453 (node) Z 1 8453 8453 0 -1 4227140 2718 0 0 0", true},
		{"8453 (MainThread) R 1 8453 8453 0 -1 4194628 2718 0 0 0", true}, // PF_EXITING
		{"8453 (a (b) c) S 1 8453 8453 0 -1 4194560 2718 0 0 0", false},
		{"8453 (odd", false},
	} {
		if got := dying([]byte(tc.stat)); got != tc.want {
			t.Errorf("dying(%q) = %v, want %v", tc.stat, got, tc.want)
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if dying(self) {
		t.Errorf("this live test process reads as dying: %s", self)
	}
}
