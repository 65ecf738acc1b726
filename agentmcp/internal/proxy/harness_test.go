package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// testConn is an MCP client talking to a Server over in-memory pipes.
type testConn struct {
	t    *testing.T
	w    jsonrpcframe.Writer
	in   io.WriteCloser
	srv  *Server
	fb   *fakebackend.Backend
	home string

	stalled atomic.Bool // set: the client stops reading the proxy's output
	hungUp  atomic.Bool // set: the client has closed the proxy's stdout
	out     io.Closer   // the client's end of the proxy's stdout

	mu          sync.Mutex
	next        int64
	waiting     map[jsonrpcframe.ID]chan *jsonrpcframe.Message
	notes       []*jsonrpcframe.Message
	onRequest   func(*jsonrpcframe.Message) any // answers server→client requests
	runErr      chan error
	nullReplies []*jsonrpcframe.Message
}

type harnessOpts struct {
	kind   codexchild.Kind
	modify func(*Options)
	resume *string
	// osPipe: the proxy writes to an OS pipe (as to Claude) instead of an
	// in-memory one, and the client's reading can be stalled.
	osPipe bool
}

// writeTeam creates a team config with the given members.
func writeTeam(t testing.TB, home, team string, members ...string) {
	t.Helper()
	dir := filepath.Join(home, ".claude", "teams", team)
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o755); err != nil {
		t.Fatal(err)
	}
	var ms []map[string]any
	for _, m := range members {
		ms = append(ms, map[string]any{"agentId": m + "@" + team, "name": m, "agentType": "general-purpose", "joinedAt": 1})
	}
	b, _ := json.MarshalIndent(map[string]any{"name": team, "createdAt": 1, "leadAgentId": "team-lead@" + team, "members": ms}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func startProxy(t *testing.T, ho harnessOpts) *testConn {
	t.Helper()
	home := t.TempDir()
	return startProxyAt(t, home, ho)
}

func startProxyAt(t *testing.T, home string, ho harnessOpts) *testConn {
	t.Helper()
	checkNoLeaks(t)
	if ho.kind == "" {
		ho.kind = codexchild.KindMCPServer
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "teams", "dev", "config.json")); err != nil {
		writeTeam(t, home, "dev", "team-lead", "arch", "dev-1", "codex", "proxy")
	}
	fb := fakebackend.New(fakebackend.Config{Protocol: ho.kind})
	opts := Options{Home: home, Team: "dev", Identity: "proxy", Backend: fb, Cwd: home, AutoMail: true, PersistThreads: true,
		SummaryTimeout: 2 * time.Second}
	if ho.modify != nil {
		ho.modify(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if ho.resume != nil {
		if _, err := srv.Resume(*ho.resume); err != nil {
			t.Fatalf("Resume: %v", err)
		}
	}
	inR, inW := io.Pipe()
	var outR io.ReadCloser
	var outW io.WriteCloser
	if ho.osPipe {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW = r, w
	} else {
		outR, outW = io.Pipe()
	}
	c := &testConn{t: t, in: inW, w: jsonrpcframe.NewLineWriter(inW), srv: srv, fb: fb, home: home, out: outR,
		waiting: map[jsonrpcframe.ID]chan *jsonrpcframe.Message{}, runErr: make(chan error, 1)}
	go func() {
		err := srv.Run(context.Background(), inR, outW)
		outW.Close()
		c.runErr <- err
	}()
	go c.readLoop(stallReader{c, outR})
	t.Cleanup(func() { c.close() })
	return c
}

// stallReader reads only while the client is not stalled.
type stallReader struct {
	c *testConn
	r io.Reader
}

func (s stallReader) Read(p []byte) (int, error) {
	for s.c.stalled.Load() {
		time.Sleep(time.Millisecond)
	}
	return s.r.Read(p)
}

func (c *testConn) readLoop(r io.Reader) {
	lr := jsonrpcframe.NewLineReader(r, nil)
	for {
		m, err := lr.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !c.hungUp.Load() {
				c.t.Errorf("proxy wrote something that is not JSON-RPC: %v", err)
				if errors.Is(err, jsonrpcframe.ErrParse) {
					continue
				}
			}
			c.mu.Lock()
			for id, ch := range c.waiting {
				close(ch)
				delete(c.waiting, id)
			}
			c.mu.Unlock()
			return
		}
		switch m.Kind() {
		case jsonrpcframe.KindResponse:
			c.mu.Lock()
			ch := c.waiting[m.ID]
			delete(c.waiting, m.ID)
			c.mu.Unlock()
			switch {
			case ch != nil:
				ch <- m
			case m.ID.IsNull():
				c.mu.Lock()
				c.nullReplies = append(c.nullReplies, m)
				c.mu.Unlock()
			default:
				c.t.Errorf("response for an unknown id %s", m.ID)
			}
		case jsonrpcframe.KindNotification:
			c.mu.Lock()
			c.notes = append(c.notes, m)
			c.mu.Unlock()
		case jsonrpcframe.KindRequest:
			c.mu.Lock()
			h := c.onRequest
			c.mu.Unlock()
			go func() {
				var result any = map[string]any{"action": "decline"}
				if h != nil {
					result = h(m)
				}
				resp, _ := jsonrpcframe.NewResponse(m.ID, result)
				_ = c.w.Write(resp)
			}()
		}
	}
}

// send writes a request and returns a channel for its response.
func (c *testConn) send(method string, params any) (jsonrpcframe.ID, chan *jsonrpcframe.Message) {
	c.mu.Lock()
	c.next++
	id := jsonrpcframe.IntID(c.next)
	ch := make(chan *jsonrpcframe.Message, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	m, err := jsonrpcframe.NewRequest(id, method, params)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.w.Write(m); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	return id, ch
}

func (c *testConn) wait(ch chan *jsonrpcframe.Message) *jsonrpcframe.Message {
	c.t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			c.t.Fatal("connection closed before the response")
		}
		return m
	case <-time.After(20 * time.Second):
		c.t.Fatal("no response within 20 s")
	}
	return nil
}

func (c *testConn) call(method string, params any) *jsonrpcframe.Message {
	c.t.Helper()
	_, ch := c.send(method, params)
	return c.wait(ch)
}

// tool calls a tool and returns the response.
func (c *testConn) tool(name string, args map[string]any) *jsonrpcframe.Message {
	c.t.Helper()
	return c.call("tools/call", map[string]any{"name": name, "arguments": args})
}

// structured returns a successful tool result's structuredContent.
func (c *testConn) structured(m *jsonrpcframe.Message) map[string]any {
	c.t.Helper()
	if m.Error != nil {
		c.t.Fatalf("error response: %s", m.Error)
	}
	var r struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		c.t.Fatal(err)
	}
	return r.StructuredContent
}

// rpcErr returns an error response's code and data.
func (c *testConn) rpcErr(m *jsonrpcframe.Message) (int64, map[string]any) {
	c.t.Helper()
	if m.Error == nil {
		c.t.Fatalf("want an error, got result %s", m.Result)
	}
	var e struct {
		Code int64          `json:"code"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(m.Error, &e); err != nil {
		c.t.Fatal(err)
	}
	return e.Code, e.Data
}

func (c *testConn) notifications(method string) []*jsonrpcframe.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*jsonrpcframe.Message
	for _, m := range c.notes {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

func (c *testConn) initialize(elicitation bool) {
	c.t.Helper()
	caps := map[string]any{}
	if elicitation {
		caps["elicitation"] = map[string]any{}
	}
	m := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": caps,
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	if m.Error != nil {
		c.t.Fatalf("initialize: %s", m.Error)
	}
	n, _ := jsonrpcframe.NewNotification("notifications/initialized", nil)
	_ = c.w.Write(n)
}

// hangUp closes the client's end of the proxy's stdout: the proxy's next
// write fails, as when Claude has gone.
func (c *testConn) hangUp() {
	c.hungUp.Store(true)
	c.out.Close()
}

// close ends the client's stdin and waits for a graceful shutdown.
func (c *testConn) close() {
	c.in.Close()
	select {
	case err := <-c.runErr:
		if err != nil {
			c.t.Errorf("Run: %v", err)
		}
		c.runErr <- nil
	case <-time.After(30 * time.Second):
		c.t.Error("proxy did not shut down within 30 s")
	}
}

// checkNoLeaks fails the test if it leaves goroutines running: a server's
// Run must end everything it started.
func checkNoLeaks(t *testing.T) { leakcheck.Check(t, "proxy.") }
