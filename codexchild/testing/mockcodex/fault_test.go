package mockcodex

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCLI(t *testing.T) {
	tests := []struct {
		args []string
		env  []string
		code int
		out  string
	}{
		{args: []string{"--version"}, out: "codex-cli 0.153.4\n"},
		{args: []string{"--version"}, env: []string{"MOCKCODEX_VERSION=0.104.0"}, out: "codex-cli 0.104.0\n"},
		{args: []string{"mcp-server", "--help"}, out: "Start Codex as an MCP server"},
		{args: []string{"bogus"}, code: 2},
	}
	for _, tt := range tests {
		cmd := exec.Command(binPath, tt.args...)
		cmd.Env = append(os.Environ(), tt.env...)
		out, _ := cmd.Output()
		if cmd.ProcessState.ExitCode() != tt.code || !strings.HasPrefix(string(out), tt.out) {
			t.Errorf("%v: exit %d, stdout %q; want %d, %q", tt.args, cmd.ProcessState.ExitCode(), out, tt.code, tt.out)
		}
	}
}

func TestStartFail(t *testing.T) {
	c := startBin(t, testEnv(t, "MOCKCODEX_START_FAIL", "7"), nil, "mcp-server")
	// The mock may be gone before the request is written (EPIPE): either
	// way it must not answer.
	_, _ = c.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n"))
	<-c.exited
	if c.code != 7 {
		t.Errorf("exit code = %d, want 7", c.code)
	}
	if _, ok := <-c.lines; ok {
		t.Errorf("initialize was answered")
	}
}

func TestCrash(t *testing.T) {
	tests := []struct {
		word   string
		code   int
		signal syscall.Signal
	}{
		{"CRASH=3", 3, 0},
		{"CRASH=SIGKILL", -1, syscall.SIGKILL},
		{"CRASH=SIGSEGV", -1, syscall.SIGSEGV},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			c := startBin(t, testEnv(t), nil, "-c", `model="m"`, "mcp-server")
			c.initialize()
			c.call(2, "codex", msg{"prompt": tt.word, "cwd": t.TempDir()})
			n := 0
			for range c.lines {
				n++
			}
			<-c.exited
			ws := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if c.code != tt.code || tt.signal != 0 && ws.Signal() != tt.signal {
				t.Errorf("exit code %d signal %v; want %d %v", c.code, ws.Signal(), tt.code, tt.signal)
			}
			if n < 5 {
				t.Errorf("only %d events before the crash", n)
			}
		})
	}
}

func TestHangGarbageFlood(t *testing.T) {
	// stderr is a pipe nobody reads: the flood must not block stdout.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := startBin(t, testEnv(t), w, "mcp-server")
	w.Close()
	c.initialize()
	c.call(2, "codex", msg{"prompt": "HANG", "cwd": t.TempDir()})
	c.call(3, "codex", msg{"prompt": "GARBAGE STDERR_FLOOD=2000000", "cwd": t.TempDir()})
	var raw []string
	var result msg
	deadline := time.After(10 * time.Second)
	for result == nil {
		select {
		case line := <-c.lines:
			var m msg
			if json.Unmarshal([]byte(line), &m) != nil {
				raw = append(raw, line)
				continue
			}
			if m["id"] == 3.0 {
				result = m
			}
			if m["id"] == 2.0 {
				t.Fatalf("the HANG turn answered")
			}
		case <-deadline:
			t.Fatalf("no result while stderr is full; raw lines %q", raw)
		}
	}
	if len(raw) != 3 {
		t.Errorf("garbage lines = %q, want 3", raw)
	}
	if got := resultText(result); got != "MOCK_REPLY: GARBAGE STDERR_FLOOD=2000000" {
		t.Errorf("text = %q", got)
	}
}

func TestReceivedLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "log.jsonl")
	c := start(t, testEnv(t, "MOCKCODEX_LOG", logPath), "mcp-server")
	c.initialize()
	c.call(2, "codex", msg{"prompt": "hi", "cwd": t.TempDir(), "model": "m1"})
	c.response(2)
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Argv []string
			Msg  struct {
				Method string
				Params struct {
					Arguments map[string]any
				}
			}
		}
		_ = json.Unmarshal([]byte(l), &e)
		switch {
		case e.Argv != nil:
			got = append(got, strings.Join(e.Argv, " "))
		case e.Msg.Params.Arguments != nil:
			got = append(got, e.Msg.Method+" model="+e.Msg.Params.Arguments["model"].(string))
		default:
			got = append(got, e.Msg.Method)
		}
	}
	want := []string{"mockcodex mcp-server", "initialize", "notifications/initialized", "tools/call model=m1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestToolServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MOCKCODEX_TEST_LEAK", "leaked") // in our env, must not reach the server
	server := func(identity, mode string) msg {
		return msg{"command": exe, "args": []any{"-test.run=^$"}, "default_tools_approval_mode": mode, "required": true,
			"env": msg{"MOCKCODEX_TEST_TOOLSERVER": "1", "MOCKCODEX_TEST_IDENTITY": identity, "MOCKCODEX_TEST_SECRET": identity + "-secret"}}
	}
	c := start(t, testEnv(t), "mcp-server")
	c.initialize()
	t.Run("nested config, approve", func(t *testing.T) {
		c.call(2, "codex", msg{"prompt": "CALL_TOOL=mcp__mail.echo ARGS={\"text\":\"hi\"}", "cwd": t.TempDir(),
			"config": msg{"mcp_servers": msg{"mail": server("alice", "approve")}}})
		evs, res := c.response(2)
		if diff := cmp.Diff(msg{"type": "mcp_startup_complete", "ready": []any{"mail"}, "failed": []any{}, "cancelled": []any{}},
			findEvent(evs, "mcp_startup_complete")); diff != "" {
			t.Errorf("startup (-want +got):\n%s", diff)
		}
		got := resultText(res)
		if !strings.HasPrefix(got, "MOCK_DONE: tool output was: Wall time: ") || !strings.HasSuffix(got, "\nOutput:\nidentity=alice secret=alice-secret leaked= text=hi") {
			t.Errorf("text = %q", got)
		}
	})
	t.Run("dotted config, approval needed: hangs", func(t *testing.T) {
		cfg := msg{}
		for k, v := range server("bob", "auto") {
			cfg["mcp_servers.mail."+k] = v
		}
		c.call(3, "codex", msg{"prompt": "CALL_TOOL=mcp__mail.echo ARGS={}", "cwd": t.TempDir(), "config": cfg})
		c.until(5*time.Second, func(m msg) bool { return evType(m) == "elicitation_request" })
		c.quiet(300 * time.Millisecond)
	})
	t.Run("unknown namespace", func(t *testing.T) {
		c.call(4, "codex", msg{"prompt": "CALL_TOOL=mail.echo", "cwd": t.TempDir()})
		_, res := c.response(4)
		if got := resultText(res); got != "MOCK_DONE: tool output was: unsupported call: echo" {
			t.Errorf("text = %q", got)
		}
	})
	t.Run("required and bad command", func(t *testing.T) {
		c.call(5, "codex", msg{"prompt": "x", "cwd": t.TempDir(),
			"config": msg{"mcp_servers.mail.command": "/no/such/binary", "mcp_servers.mail.required": true}})
		_, res := c.response(5)
		want := "Failed to start Codex session: error creating thread: required MCP servers failed to initialize: mail: No such file or directory (os error 2)"
		if got := resultText(res); got != want || res["result"].(msg)["isError"] != true {
			t.Errorf("result = %v", res["result"])
		}
	})
}
