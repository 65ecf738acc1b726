package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// handlerFunc is a Handler.
type handlerFunc func(ctx context.Context, c *ToolCall) (*ToolResult, error)

func (f handlerFunc) CallTool(ctx context.Context, c *ToolCall) (*ToolResult, error) {
	return f(ctx, c)
}

// forwarding is a Handler that is also a Forwarder.
type forwarding struct {
	handlerFunc
	forward func(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error)
	notes   chan string
}

func (f forwarding) Forward(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	return f.forward(ctx, m)
}
func (f forwarding) Notify(m *jsonrpcframe.Message) { f.notes <- m.Method }

// echo answers every call with its name.
var echo = handlerFunc(func(_ context.Context, c *ToolCall) (*ToolResult, error) {
	return &ToolResult{Text: "called " + c.Name}, nil
})

// testClient is the client's end of a Conn, over pipes.
type testClient struct {
	t    *testing.T
	conn *Conn
	w    jsonrpcframe.Writer
	in   io.Closer
	msgs chan *jsonrpcframe.Message
	next int64
}

// start connects a Conn with cfg (Handler echo unless set) to a client
// over in-memory pipes, or over an OS pipe for the Conn's output with
// osPipe (the pipe gauge is then on).
func start(t *testing.T, cfg Config, osPipe bool) *testClient {
	t.Helper()
	checkNoLeaks(t)
	if cfg.Handler == nil {
		cfg.Handler = echo
	}
	// The client's side is an OS pipe: its buffer lets the test write
	// requests the Conn has not read yet.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var outR io.ReadCloser
	var outW io.WriteCloser
	if osPipe {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW = r, w
	} else {
		outR, outW = io.Pipe()
	}
	c := &testClient{t: t, conn: New(cfg), w: jsonrpcframe.NewLineWriter(inW), in: inW, msgs: make(chan *jsonrpcframe.Message, 4096)}
	c.conn.Start(inR, outW)
	t.Cleanup(func() { inR.Close() })
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		lr := jsonrpcframe.NewLineReader(outR, nil)
		for {
			m, err := lr.Read()
			if err != nil {
				return
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.conn.Done():
		case <-time.After(10 * time.Second):
			t.Error("the reading did not end with the client's stdin")
		}
		c.conn.CancelAll()
		c.conn.Wait(5 * time.Second)
		c.conn.Close()
		outW.Close()
		<-readDone
		outR.Close()
	})
	return c
}

// send writes a request and returns its id.
func (c *testClient) send(method string, params any) jsonrpcframe.ID {
	c.t.Helper()
	c.next++
	id := jsonrpcframe.IntID(c.next)
	m, err := jsonrpcframe.NewRequest(id, method, params)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.w.Write(m); err != nil {
		c.t.Fatal(err)
	}
	return id
}

// raw writes a line as it is.
func (c *testClient) raw(line string) {
	c.t.Helper()
	if _, err := c.in.(io.Writer).Write([]byte(line + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next message the Conn writes.
func (c *testClient) read() *jsonrpcframe.Message {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the Conn within 10 s")
		return nil
	}
}

// response reads until the response with id, and returns it with what came
// before it.
func (c *testClient) response(id jsonrpcframe.ID) (*jsonrpcframe.Message, []*jsonrpcframe.Message) {
	c.t.Helper()
	var before []*jsonrpcframe.Message
	for {
		m := c.read()
		if m.IsResponse() && m.ID == id {
			return m, before
		}
		before = append(before, m)
	}
}

// call sends a request and returns its response.
func (c *testClient) call(method string, params any) *jsonrpcframe.Message {
	c.t.Helper()
	m, _ := c.response(c.send(method, params))
	return m
}

// answer sends a request with raw params and renders its response: the
// result's JSON, or "code message" for an error.
func (c *testClient) answer(method, params string) string {
	c.t.Helper()
	m := c.call(method, json.RawMessage(params))
	if m.Error != nil {
		code, msg := errorOf(c.t, m)
		return fmt.Sprint(code, " ", msg)
	}
	return string(m.Result)
}

func tool(name string, args any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

func errorOf(t *testing.T, m *jsonrpcframe.Message) (int64, string) {
	t.Helper()
	var e struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	if m.Error == nil {
		t.Fatalf("want an error, got %s", m.Result)
	}
	if err := json.Unmarshal(m.Error, &e); err != nil {
		t.Fatal(err)
	}
	return e.Code, e.Message
}

func TestMethodsAnsweredByTheConn(t *testing.T) {
	c := start(t, Config{ServerInfo: ServerInfo{Name: "srv", Version: "1.0"}, Instructions: "be nice",
		Tools: json.RawMessage(`[{"name":"a","inputSchema":{"type":"object"}}]`)}, false)
	tests := []struct {
		method, params string
		want           string // the result, or the error code and message
	}{
		{"initialize", `{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}`,
			`{"capabilities":{"logging":{},"tools":{"listChanged":false}},"instructions":"be nice","protocolVersion":"2025-06-18","serverInfo":{"name":"srv","version":"1.0"}}`},
		{"initialize", `{"protocolVersion":"1999-01-01"}`,
			`{"capabilities":{"logging":{},"tools":{"listChanged":false}},"instructions":"be nice","protocolVersion":"2025-11-25","serverInfo":{"name":"srv","version":"1.0"}}`},
		{"initialize", `[1]`, `-32602 initialize: json: cannot unmarshal array into Go value of type struct { ProtocolVersion string "json:\"protocolVersion\""; Capabilities struct { Elicitation json.RawMessage "json:\"elicitation\"" } "json:\"capabilities\""; ClientInfo struct { Name string "json:\"name\""; Version string "json:\"version\"" } "json:\"clientInfo\"" }`},
		{"ping", `{}`, `{}`},
		{"logging/setLevel", `{"level":"debug"}`, `{}`},
		{"tools/list", `{}`, `{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`},
		{"resources/list", `{}`, `{"resources":[]}`},
		{"resources/templates/list", `{}`, `{"resourceTemplates":[]}`},
		{"prompts/list", `{}`, `{"prompts":[]}`},
		{"resources/read", `{"uri":"x"}`, `-32602 resources/read: this server has no resources`},
		{"prompts/get", `{"name":"x"}`, `-32602 prompts/get: this server has no prompts`},
		{"thread/list", `{}`, `-32601 method not found: thread/list`},
		{"tools/call", `{"arguments":{}}`, `-32602 tools/call needs params {name, arguments}`},
		{"tools/call", `{"name":"x","arguments":[1]}`, `-32602 arguments must be a JSON object`},
		{"tools/call", `{"name":"x"}`, `{"content":[{"text":"called x","type":"text"}]}`},
	}
	for _, tt := range tests {
		if got := c.answer(tt.method, tt.params); got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.method+" "+tt.params, got, tt.want)
		}
	}
	// The last initialize that parsed wins: it offered no elicitation.
	if c.conn.Elicitation() || c.conn.ProtocolVersion() != "2025-11-25" {
		t.Errorf("after the second initialize: elicitation %v, version %q", c.conn.Elicitation(), c.conn.ProtocolVersion())
	}
}

func TestBadInputKeepsTheConnection(t *testing.T) {
	c := start(t, Config{}, false)
	c.raw("this is not json")
	if m := c.read(); !m.ID.IsNull() || !strings.Contains(string(m.Error), "-32700") {
		t.Errorf("after garbage: %+v, want -32700 with a null id", m)
	}
	c.raw(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	m := c.read()
	if code, msg := errorOf(t, m); !m.ID.IsNull() || code != -32600 || !strings.Contains(msg, "batches are not supported") {
		t.Errorf("a batch: %d %q", code, msg)
	}
	if m := c.call("ping", nil); m.Error != nil {
		t.Errorf("ping after bad input: %s", m.Error)
	}
}

// TestReadingOrderAndRelease: calls reach the Handler in read order; one
// that waits without releasing holds the reading (the next message is not
// read); one that releases lets the next be read while it waits.
func TestReadingOrderAndRelease(t *testing.T) {
	var mu sync.Mutex
	var order []string
	gates := map[string]chan struct{}{"hold": make(chan struct{}), "release": make(chan struct{})}
	h := handlerFunc(func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		mu.Lock()
		order = append(order, call.Name)
		mu.Unlock()
		if call.Name == "release" {
			Release(ctx)
		}
		if g := gates[call.Name]; g != nil {
			<-g
		}
		return &ToolResult{Text: call.Name}, nil
	})
	seen := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(order, " "), name)
	}
	c := start(t, Config{Handler: h}, false)
	hold := c.send("tools/call", tool("hold", nil))
	after := c.send("tools/call", tool("after-hold", nil))
	time.Sleep(50 * time.Millisecond) // had it been read, it would have been called
	if seen("after-hold") {
		t.Error("a call was read while the previous one held the reading role")
	}
	close(gates["hold"])
	c.response(hold)
	c.response(after)

	rel := c.send("tools/call", tool("release", nil))
	next := c.send("tools/call", tool("after-release", nil))
	c.response(next) // answered while "release" still waits
	close(gates["release"])
	c.response(rel)
	if diff := cmp.Diff([]string{"hold", "after-hold", "release", "after-release"}, order); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestReleaseOutsideTheCall: Release from another goroutine, or after
// CallTool returned, never starts a second reader: every message is
// dispatched once.
func TestReleaseOutsideTheCall(t *testing.T) {
	var calls atomic.Int64
	var kept []*ToolCall
	var mu sync.Mutex
	h := handlerFunc(func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		calls.Add(1)
		mu.Lock()
		kept = append(kept, call)
		mu.Unlock()
		go call.Release() // from another goroutine: it hands the role on, or does nothing
		return &ToolResult{Text: "ok"}, nil
	})
	c := start(t, Config{Handler: h}, false)
	const n = 50
	ids := make([]jsonrpcframe.ID, n)
	for i := range ids {
		ids[i] = c.send("tools/call", tool("t", nil))
	}
	got := map[jsonrpcframe.ID]int{}
	for range n {
		m := c.read()
		got[m.ID]++
	}
	mu.Lock()
	for _, call := range kept {
		call.Release() // after return: nothing
	}
	mu.Unlock()
	if m := c.call("ping", nil); m.Error != nil {
		t.Fatal(m.Error)
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("%d responses to %s, want 1", got[id], id)
		}
	}
	if calls.Load() != n {
		t.Errorf("%d calls for %d requests", calls.Load(), n)
	}
}

func TestForwarder(t *testing.T) {
	f := forwarding{handlerFunc: echo, notes: make(chan string, 4),
		forward: func(_ context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
			if m.Method == "fail" {
				return nil, proxyerr.New(proxyerr.ErrRequestTimeout, nil, "codex did not answer in time")
			}
			return jsonrpcframe.NewResponse(jsonrpcframe.IntID(999), map[string]any{"echo": m.Method})
		}}
	c := start(t, Config{Handler: f}, false)
	if m := c.call("custom/thing", map[string]any{}); string(m.Result) != `{"echo":"custom/thing"}` {
		t.Errorf("forwarded: %s %s", m.Result, m.Error)
	}
	if code, msg := errorOf(t, c.call("fail", nil)); code != proxyerr.CodeRequestTimeout || msg != "codex did not answer in time" {
		t.Errorf("forward error: %d %s", code, msg)
	}
	n, _ := jsonrpcframe.NewNotification("notifications/roots/list_changed", nil)
	_ = c.w.Write(n)
	if got := <-f.notes; got != "notifications/roots/list_changed" {
		t.Errorf("Notify got %s", got)
	}
}

func TestCancelRefuseAndWait(t *testing.T) {
	cancelled, waiting := make(chan struct{}), make(chan struct{})
	h := handlerFunc(func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		Release(ctx)
		if call.Name == "waits" {
			close(waiting)
		}
		<-ctx.Done()
		if call.Name == "cancel-me" {
			close(cancelled)
		}
		return nil, ctx.Err()
	})
	c := start(t, Config{Handler: h}, false)
	id := c.send("tools/call", tool("cancel-me", nil))
	n, _ := jsonrpcframe.NewNotification("notifications/cancelled", map[string]any{"requestId": id, "reason": "user"})
	_ = c.w.Write(n)
	<-cancelled
	ping := c.send("ping", nil)
	_, before := c.response(ping)
	time.Sleep(20 * time.Millisecond)
	select {
	case m := <-c.msgs:
		t.Errorf("a response to a cancelled request: %+v", m)
	default:
	}
	for _, m := range before {
		if m.ID == id {
			t.Errorf("a response to a cancelled request: %+v", m)
		}
	}
	c.send("tools/call", tool("waits", nil))
	<-waiting
	if c.conn.Wait(20 * time.Millisecond) {
		t.Error("Wait returned with a request running")
	}
	c.conn.Refuse(proxyerr.New(proxyerr.ErrInvalidSessionParams, nil, "the proxy is shutting down"))
	if code, msg := errorOf(t, c.call("tools/call", tool("late", nil))); code != proxyerr.CodeInvalidSessionParams || msg != "the proxy is shutting down" {
		t.Errorf("refused: %d %s", code, msg)
	}
	c.conn.CancelAll()
	if !c.conn.Wait(5 * time.Second) {
		t.Error("a request still runs after CancelAll")
	}
}

func TestServerRequests(t *testing.T) {
	c := start(t, Config{}, false)
	type out struct {
		m   *jsonrpcframe.Message
		err error
	}
	done := make(chan out, 1)
	go func() {
		m, err := c.conn.Request(context.Background(), "elicitation/create", map[string]any{"message": "ok?"})
		done <- out{m, err}
	}()
	req := c.read()
	if req.Method != "elicitation/create" {
		t.Fatalf("got %+v, want the request", req)
	}
	resp, _ := jsonrpcframe.NewResponse(req.ID, map[string]any{"action": "accept"})
	_ = c.w.Write(resp)
	if o := <-done; o.err != nil || string(o.m.Result) != `{"action":"accept"}` {
		t.Errorf("Request = %+v, %v", o.m, o.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := c.conn.Request(ctx, "elicitation/create", map[string]any{})
		done <- out{nil, err}
	}()
	req = c.read()
	cancel()
	if o := <-done; !errors.Is(o.err, context.Canceled) {
		t.Errorf("Request after ctx's end: %v", o.err)
	}
	if n := c.read(); n.Method != "notifications/cancelled" || !strings.Contains(string(n.Params), req.ID.String()) {
		t.Errorf("after ctx's end: %+v, want notifications/cancelled", n)
	}
	c.conn.Close()
	if _, err := c.conn.Request(context.Background(), "elicitation/create", nil); !errors.Is(err, ErrClientGone) {
		t.Errorf("Request after Close: %v, want ErrClientGone", err)
	}
}

// TestProgressBeforeTheResponseOnly: a client that keeps up gets the
// progress of a request before its response, and none after it. (Without
// a pipe gauge, as here, progress goes through the pump: the handler waits
// until the client has read it, as a turn's progress is long read before
// its answer.)
func TestProgressBeforeTheResponseOnly(t *testing.T) {
	var call *ToolCall
	read := make(chan struct{})
	h := handlerFunc(func(ctx context.Context, c *ToolCall) (*ToolResult, error) {
		call = c
		c.Progress.Send("working")
		<-read
		return &ToolResult{Text: "done"}, nil
	})
	c := start(t, Config{Handler: h}, false)
	c.send("tools/call", map[string]any{"name": "t", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "tok"}})
	if m := c.read(); m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"message":"working"`) {
		t.Fatalf("before the response: %+v", m)
	}
	close(read)
	if m := c.read(); !m.IsResponse() {
		t.Fatalf("after the progress: %+v, want the response", m)
	}
	call.Progress.Send("late")
	if m := c.call("ping", nil); m.Error != nil {
		t.Fatal(m.Error)
	}
	select {
	case m := <-c.msgs:
		t.Errorf("after the response: %s %s", m.Method, m.Params)
	default:
	}
}

// TestTryReplyNow: a call answered from another goroutine gets exactly one
// response; commit runs before it is written; without a pipe gauge nothing
// is answered early.
func TestTryReplyNow(t *testing.T) {
	for _, osPipe := range []bool{true, false} {
		t.Run(fmt.Sprint("gauge=", osPipe), func(t *testing.T) {
			// msgs is handed over through a channel: the request that
			// reaches the handler travels through an OS pipe, which the race
			// detector does not see as synchronisation.
			msgs := make(chan chan *jsonrpcframe.Message, 1)
			var early, committed atomic.Bool
			returned := make(chan struct{}) // CallTool has returned: early is set
			var pendingAtCommit atomic.Int64
			h := handlerFunc(func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
				Release(ctx)
				out := <-msgs
				done := make(chan bool)
				go func() { // as from the Codex reader
					done <- call.TryReplyNow(&ToolResult{Text: "early"}, func() {
						committed.Store(true)
						pendingAtCommit.Store(int64(len(out)))
					})
				}()
				defer close(returned)
				if <-done {
					early.Store(true)
					return nil, ErrAnswered
				}
				return &ToolResult{Text: "late"}, nil
			})
			c := start(t, Config{Handler: h}, osPipe)
			msgs <- c.msgs
			m, _ := c.response(c.send("tools/call", tool("t", nil)))
			want := "late"
			if osPipe {
				want = "early"
			}
			if !strings.Contains(string(m.Result), `"text":"`+want+`"`) {
				t.Errorf("response %s, want %s", m.Result, want)
			}
			<-returned // the early answer can reach the client before CallTool returns
			if early.Load() != osPipe || committed.Load() != osPipe {
				t.Errorf("answered early %v, committed %v; want %v", early.Load(), committed.Load(), osPipe)
			}
			if pendingAtCommit.Load() != 0 {
				t.Error("the response was out before commit ran")
			}
			if m := c.call("ping", nil); m.Error != nil {
				t.Fatal(m.Error)
			}
			select {
			case m := <-c.msgs:
				t.Errorf("a second response: %+v", m)
			default:
			}
		})
	}
}

// TestEventsDroppedNotWaitedFor: events for a client that does not read
// queue up to the bound, then are dropped; Event never waits.
func TestEventsDroppedNotWaitedFor(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // nobody reads it: a deliberately slow client
	var logged bytes.Buffer
	var logMu sync.Mutex
	conn := New(Config{Handler: echo, EventQueue: 10, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &logMu}, nil))})
	conn.Start(inR, outW)
	defer func() { inW.Close(); <-conn.Done(); conn.Close(); outW.Close(); outR.Close() }()
	kept := 0
	for range 100 {
		if conn.Event(func() *jsonrpcframe.Message {
			m, _ := jsonrpcframe.NewNotification("codex/event", map[string]any{"x": 1})
			return m
		}, true) {
			kept++
		}
	}
	if st := conn.Stats(); st.Dropped == 0 || int(st.Dropped)+kept != 100 || st.Queued > 10 {
		t.Errorf("kept %d, stats %+v: want at most 10 queued and the rest dropped", kept, st)
	}
	// The log says so, once (not once per dropped event).
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logged.String(), "the client reads slower than Codex writes"); n != 1 {
		t.Errorf("%d drop warnings, want 1:\n%s", n, logged.String())
	}
}

// TestProgressDroppedNotWaitedFor: progress, like events, never waits for
// a client that does not read — not even while an answer being written to
// it holds the write order (omu): it queues up to the bound, then is
// dropped and counted; Flush returns at once with nothing held.
func TestProgressDroppedNotWaitedFor(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // nobody reads it: a client that stopped reading
	conn := New(Config{Handler: echo, EventQueue: 10})
	conn.Start(inR, outW)
	defer func() { inW.Close(); <-conn.Done(); conn.Close(); outW.Close(); outR.Close() }()
	go func() {
		m, _ := jsonrpcframe.NewResponse(jsonrpcframe.IntID(1), map[string]any{})
		_ = conn.out.write(m) // an answer: it may wait, holding omu
	}()
	holdOMU(t, conn.out)
	p := &Progress{c: conn.out, token: json.RawMessage(`"tok"`)}
	noWait(t, "Progress.Send, Flush and Event", func() {
		for range 100 {
			p.Send("working")
		}
		conn.Flush()
		for range 100 {
			conn.Event(func() *jsonrpcframe.Message {
				m, _ := jsonrpcframe.NewNotification("codex/event", map[string]any{"x": 1})
				return m
			}, true)
		}
		conn.Flush()
	})
	// At most a queue's worth waits for the pump and a batch of it in the
	// pump; the rest is dropped.
	if st := conn.Stats(); st.ProgressDropped < 100-2*10 || st.Dropped < 100-2*10 || st.Queued > 10 {
		t.Errorf("stats %+v: want at least 80 progress notifications and 80 events dropped, at most 10 queued", st)
	}
}

// lockedWriter is an io.Writer safe for concurrent use.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestPool(t *testing.T) {
	p := &pool{mu: new(sync.Mutex)}
	if p.take() != nil {
		t.Fatal("take from an empty pool")
	}
	wakes := make([]chan *reader, maxIdle+1)
	for i := range wakes {
		wakes[i] = make(chan *reader, 1)
		if got, want := p.park(wakes[i]), i < maxIdle; got != want {
			t.Errorf("park %d = %v, want %v", i, got, want)
		}
	}
	if got := p.take(); got != wakes[maxIdle-1] {
		t.Error("take did not return the last parked")
	}
	taken := p.take()
	p.close()
	for _, w := range wakes[:maxIdle-2] {
		if _, ok := <-w; ok {
			t.Error("a parked wake-up was not closed")
		}
	}
	taken <- &reader{} // not closed: its taker sends the role
	if p.park(make(chan *reader, 1)) || p.take() != nil {
		t.Error("the pool works after close")
	}
}

func FuzzParseToolCall(f *testing.F) {
	for _, s := range []string{`{"name":"codex","arguments":{"prompt":"x"}}`, `{"name":"a","_meta":{"progressToken":1}}`, `{"arguments":[]}`, `[]`, `{"name":5}`} {
		f.Add(s)
	}
	c := New(Config{})
	f.Fuzz(func(t *testing.T, params string) {
		m, err := jsonrpcframe.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`))
		if err != nil {
			return
		}
		call, err := parseCall(c, m)
		if err != nil {
			if !errors.Is(err, proxyerr.ErrInvalidParams) {
				t.Errorf("error %v is not INVALID_PARAMS", err)
			}
			return
		}
		if call.Name == "" {
			t.Error("a call without a name")
		}
		for k := range call.Args {
			_, _ = call.Args.Str(k)
		}
	})
}

// TestDuplicateLiveID: a request whose id is that of a request still in
// flight is refused with a clear error; the first goes on untouched and is
// answered; once it is, the id may be used again.
func TestDuplicateLiveID(t *testing.T) {
	release := make(chan struct{})
	h := handlerFunc(func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		Release(ctx)
		if call.Name == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &ToolResult{Text: "done " + call.Name}, nil
	})
	c := start(t, Config{Handler: h}, false)
	c.raw(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	c.raw(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"second","arguments":{}}}`)
	m := c.read()
	if code, msg := errorOf(t, m); code != jsonrpcframe.CodeInvalidRequest || msg != `request id "dup" is already in use by a request in flight; use a new id for each request` {
		t.Errorf("duplicate: %d %s", code, msg)
	}
	close(release)
	if m := c.read(); m.Error != nil || !strings.Contains(string(m.Result), "done slow") {
		t.Errorf("the first request: %s %s", m.Result, m.Error)
	}
	c.raw(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"again","arguments":{}}}`)
	if m := c.read(); !strings.Contains(string(m.Result), "done again") {
		t.Errorf("the id used again after its answer: %s %s", m.Result, m.Error)
	}
}
