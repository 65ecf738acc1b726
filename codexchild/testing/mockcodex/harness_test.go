package mockcodex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// binPath runs this test binary as mockcodex: a link to it named
// "mockcodex", made by TestMain. Run under that name, the binary runs Main.
var binPath string

func TestMain(m *testing.M) {
	if os.Getenv("MOCKCODEX_TEST_TOOLSERVER") != "" {
		serveTestTools()
		os.Exit(0)
	}
	if filepath.Base(os.Args[0]) == "mockcodex" {
		os.Exit(Main())
	}
	dir, err := os.MkdirTemp("", "mockcodex-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "mockcodex")
	exe, err := os.Executable()
	if err == nil {
		err = os.Symlink(exe, binPath)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "installing this test binary as mockcodex: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lockedBuf is a concurrency-safe bytes.Buffer for stderr.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// client talks to one mockcodex, in process (run over pipes) or as a
// child process (this test binary run as mockcodex, binPath).
type client struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuf
	exited chan struct{}
	code   int
	cmd    *exec.Cmd
	home   string
}

// testEnv returns an environment with a fresh CODEX_HOME.
func testEnv(t *testing.T, extra ...string) map[string]string {
	env := map[string]string{"CODEX_HOME": filepath.Join(t.TempDir(), "codex-home")}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// start runs mockcodex in process (run, over pipes).
func start(t *testing.T, env map[string]string, args ...string) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, stdin: inW, lines: make(chan string, 10000), stderr: &lockedBuf{}, exited: make(chan struct{}), home: env["CODEX_HOME"]}
	go func() {
		c.code = run(args, func(k string) string { return env[k] }, inR, outW, c.stderr)
		outW.Close()
		close(c.exited)
	}()
	go c.readLines(outR)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.exited:
		case <-time.After(5 * time.Second):
			t.Errorf("mockcodex did not exit after stdin EOF")
		}
	})
	return c
}

// startBin runs mockcodex as a child process (binPath); stderr is captured
// unless stderr is given.
func startBin(t *testing.T, env map[string]string, stderr io.Writer, args ...string) *client {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &client{t: t, lines: make(chan string, 10000), stderr: &lockedBuf{}, exited: make(chan struct{}), cmd: cmd, home: env["CODEX_HOME"]}
	if stderr == nil {
		stderr = c.stderr
	}
	cmd.Stderr = stderr
	var err error
	c.stdin, err = cmd.StdinPipe()
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
	go func() {
		c.readLines(out)
		_ = cmd.Wait()
		c.code = cmd.ProcessState.ExitCode()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

func (c *client) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			c.lines <- strings.TrimRight(line, "\n")
		}
		if err != nil {
			close(c.lines)
			return
		}
	}
}

func (c *client) send(v any) {
	c.t.Helper()
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			c.t.Fatal(err)
		}
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to mockcodex: %v", err)
	}
}

type msg = map[string]any

// next returns the next parsed message; it fails the test after d.
func (c *client) next(d time.Duration) msg {
	c.t.Helper()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("stdout closed; stderr:\n%s", c.stderr.String())
			}
			var m msg
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Fatalf("stdout line is not JSON: %q", line)
			}
			return m
		case <-time.After(d):
			c.t.Fatalf("no message within %v; stderr:\n%s", d, c.stderr.String())
		}
	}
}

// until collects messages up to and including the first that matches.
func (c *client) until(d time.Duration, match func(msg) bool) []msg {
	c.t.Helper()
	var got []msg
	deadline := time.Now().Add(d)
	for {
		m := c.next(time.Until(deadline))
		got = append(got, m)
		if match(m) {
			return got
		}
	}
}

// response waits for the response to id and returns the events before it.
func (c *client) response(id any) ([]msg, msg) {
	c.t.Helper()
	want, _ := json.Marshal(id)
	got := c.until(10*time.Second, func(m msg) bool {
		b, _ := json.Marshal(m["id"])
		_, hasMethod := m["method"]
		return !hasMethod && string(b) == string(want)
	})
	return got[:len(got)-1], got[len(got)-1]
}

// quiet asserts no message arrives within d.
func (c *client) quiet(d time.Duration) {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if ok {
			c.t.Fatalf("unexpected message: %s", line)
		}
	case <-time.After(d):
	}
}

func (c *client) initialize() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"probe","version":"0.0.1"}}}`)
	c.next(5 * time.Second)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// call sends a tools/call.
func (c *client) call(id any, tool string, args msg) {
	c.t.Helper()
	c.send(msg{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": msg{"name": tool, "arguments": args}})
}

// evType returns the codex/event msg type, or "".
func evType(m msg) string {
	if m["method"] != "codex/event" {
		return ""
	}
	return m["params"].(msg)["msg"].(msg)["type"].(string)
}

func evMsg(m msg) msg { return m["params"].(msg)["msg"].(msg) }

func types(ms []msg) []string {
	var out []string
	for _, m := range ms {
		if t := evType(m); t != "" {
			out = append(out, t)
		} else if s, ok := m["method"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// resultText returns content[0].text of a tools/call result.
func resultText(m msg) string {
	r, _ := m["result"].(msg)
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	return c[0].(msg)["text"].(string)
}

func threadOf(m msg) string {
	return m["result"].(msg)["structuredContent"].(msg)["threadId"].(string)
}

func findEvent(ms []msg, typ string) msg {
	for _, m := range ms {
		if evType(m) == typ {
			return evMsg(m)
		}
	}
	return nil
}

// serveTestTools is a tiny stdio MCP server with one tool, "echo", which
// answers "identity=<MOCKCODEX_TEST_IDENTITY> secret=<MOCKCODEX_TEST_SECRET>
// leaked=<MOCKCODEX_TEST_LEAK> text=<text>". The test binary becomes it when
// MOCKCODEX_TEST_TOOLSERVER is set.
func serveTestTools() {
	br := bufio.NewReader(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for {
		line, err := br.ReadBytes('\n')
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
			var result any
			switch m.Method {
			case "initialize":
				result = msg{"protocolVersion": "2025-06-18", "capabilities": msg{"tools": msg{}}, "serverInfo": msg{"name": "testtools", "version": "0"}}
			case "tools/list":
				result = msg{"tools": []any{msg{"name": "echo", "inputSchema": msg{"type": "object"}}}}
			case "tools/call":
				text := fmt.Sprintf("identity=%s secret=%s leaked=%s text=%s", os.Getenv("MOCKCODEX_TEST_IDENTITY"),
					os.Getenv("MOCKCODEX_TEST_SECRET"), os.Getenv("MOCKCODEX_TEST_LEAK"), m.Params.Arguments.Text)
				result = msg{"content": []any{msg{"type": "text", "text": text}}, "isError": false}
			default:
				result = msg{}
			}
			_ = enc.Encode(msg{"jsonrpc": "2.0", "id": m.ID, "result": result})
		}
		if err != nil {
			return
		}
	}
}
