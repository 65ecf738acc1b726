package realcodex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// conn is a minimal NDJSON JSON-RPC client over a Codex process's stdio,
// writing every line both ways to a transcript in the home's log dir.
type conn struct {
	t          *testing.T
	p          *realcodex.Process
	jsonrpc    bool // send "jsonrpc":"2.0" (mcp-server wants it; app-server does not care)
	lines      chan msg
	done       chan struct{}
	mu         sync.Mutex // guards stdin and the transcript
	transcript *os.File
	nextID     int
}

// msg is one decoded JSON-RPC message.
type msg map[string]any

func (m msg) isRequest() bool  { return m["method"] != nil && m["id"] != nil }
func (m msg) isResponse() bool { return m["method"] == nil && m["id"] != nil }
func (m msg) method() string   { s, _ := m["method"].(string); return s }

// get walks nested objects: get(m, "result", "thread", "id").
func get(v any, path ...string) any {
	for _, k := range path {
		o, ok := v.(map[string]any)
		if !ok {
			if mm, ok2 := v.(msg); ok2 {
				o = mm
			} else {
				return nil
			}
		}
		v = o[k]
	}
	return v
}

func getStr(v any, path ...string) string { s, _ := get(v, path...).(string); return s }

func sameID(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func dial(t *testing.T, h *realcodex.Home, which realcodex.Which) *conn {
	t.Helper()
	bin := realcodex.Bin(t, which)
	p := realcodex.Start(t, h, bin, which.Subcommand())
	tr, err := os.Create(filepath.Join(h.LogDir(), fmt.Sprintf("%s-%d.transcript.jsonl",
		strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{t: t, p: p, jsonrpc: which == realcodex.MCPServer, lines: make(chan msg, 1024),
		done: make(chan struct{}), transcript: tr}
	t.Cleanup(func() {
		close(c.done)
		if t.Failed() {
			c.mu.Lock()
			b, _ := os.ReadFile(tr.Name())
			c.mu.Unlock()
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("end of transcript %s:\n%s", tr.Name(), b)
		}
		tr.Close()
	})
	go c.read()
	return c
}

func (c *conn) read() {
	defer close(c.lines)
	for {
		line, err := c.p.Stdout.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			c.record("s2c", t)
			var m msg
			if json.Unmarshal(t, &m) == nil {
				select {
				case c.lines <- m:
				case <-c.done:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *conn) record(dir string, line []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.transcript, `{"dir":%q,"msg":%s}`+"\n", dir, line)
}

func (c *conn) send(m msg) {
	c.t.Helper()
	if c.jsonrpc {
		m["jsonrpc"] = "2.0"
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.record("c2s", b)
	c.mu.Lock()
	_, err = c.p.Stdin.Write(append(b, '\n'))
	c.mu.Unlock()
	if err != nil {
		c.t.Fatalf("write to codex: %v", err)
	}
}

func (c *conn) request(method string, params any) int {
	c.t.Helper()
	c.nextID++
	c.send(msg{"id": c.nextID, "method": method, "params": params})
	return c.nextID
}

func (c *conn) notify(method string, params any) {
	c.t.Helper()
	m := msg{"method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
}

func (c *conn) respond(id any, result any) {
	c.t.Helper()
	c.send(msg{"id": id, "result": result})
}

// until reads messages until pred accepts one, which it returns. Server
// requests go to onRequest (nil: the test fails on any server request);
// pred sees them too.
func (c *conn) until(ctx context.Context, what string, pred func(msg) bool, onRequest func(msg)) msg {
	c.t.Helper()
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("codex closed stdout while waiting for %s", what)
			}
			if m.isRequest() {
				if onRequest == nil {
					c.t.Fatalf("unexpected server request while waiting for %s: %v", what, m)
				}
				onRequest(m)
			}
			if pred(m) {
				return m
			}
		case <-ctx.Done():
			c.t.Fatalf("timed out waiting for %s: %v", what, ctx.Err())
		}
	}
}

// call sends a request and waits for its response (not failing on an error
// response: the caller checks).
func (c *conn) call(ctx context.Context, method string, params any, onRequest func(msg)) msg {
	c.t.Helper()
	id := c.request(method, params)
	return c.until(ctx, method+" response", func(m msg) bool { return m.isResponse() && sameID(m["id"], id) }, onRequest)
}

// mustResult is call that fails the test on an error response.
func (c *conn) mustResult(ctx context.Context, method string, params any) msg {
	c.t.Helper()
	m := c.call(ctx, method, params, nil)
	if m["error"] != nil {
		c.t.Fatalf("%s: error %v", method, m["error"])
	}
	return m
}
