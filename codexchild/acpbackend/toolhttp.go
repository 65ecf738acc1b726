package acpbackend

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Tool transports of Config.ToolTransport: how the thread's tool
// servers (ThreadParams.ToolServers) reach the agent.
const (
	// ToolsStdio gives each as a stdio MCP server that the agent starts
	// (every ACP agent must take those).
	ToolsStdio = "stdio"
	// ToolsHTTP serves each on a loopback HTTP endpoint of the backend
	// (MCP Streamable HTTP, answers as application/json), for agents that
	// refuse stdio servers (GitHub Copilot CLI): the backend runs the
	// server's command itself and passes requests through.
	ToolsHTTP = "http"
)

// toolHTTPTimeout bounds the answer of a tool server to one request.
const toolHTTPTimeout = 2 * time.Minute

// toolHTTP serves tool servers over loopback HTTP (ToolsHTTP): one
// listener on 127.0.0.1 per backend, started at the first use; one
// endpoint per distinct tool server (its name, command line and
// environment), reached at /mcp with a bearer token of its own (128 random
// bits), so that an agent reaches only the tools it was given. Each
// endpoint runs its server's command as a stdio process at its first
// request, and again after it died.
type toolHTTP struct {
	log *slog.Logger

	mu      sync.Mutex
	srv     *http.Server
	served  chan struct{} // closed when srv's Serve has returned
	url     string
	byKey   map[string]*toolBridge
	byToken map[string]*toolBridge
	closed  bool
}

func newToolHTTP(log *slog.Logger) *toolHTTP {
	return &toolHTTP{log: log, byKey: map[string]*toolBridge{}, byToken: map[string]*toolBridge{}}
}

// server returns the http MCP server entry for ts, starting the listener
// when it is not running.
func (h *toolHTTP) server(ts backend.ToolServer) (acp.MCPServer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return acp.MCPServer{}, backend.ErrClosed
	}
	if h.srv == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return acp.MCPServer{}, fmt.Errorf("acp: serving the tool servers over http: %w", err)
		}
		h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
		h.url = "http://" + ln.Addr().String() + "/mcp"
		srv, served := h.srv, make(chan struct{})
		h.served = served
		go func() { // joined by close
			defer close(served)
			_ = srv.Serve(ln)
		}()
		h.log.Info("acp: tool servers served over http", "url", h.url)
	}
	key := toolKey(ts)
	br := h.byKey[key]
	if br == nil {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		br = &toolBridge{spec: ts, token: hex.EncodeToString(b), log: h.log.With("tool_server", ts.Name)}
		h.byKey[key], h.byToken[br.token] = br, br
	}
	return acp.MCPServer{Type: "http", Name: ts.Name, URL: h.url,
		Headers: []acp.NameValue{{Name: "Authorization", Value: "Bearer " + br.token}}}, nil
}

// toolKey identifies a tool server by everything that starts it.
func toolKey(ts backend.ToolServer) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", ts.Name, ts.Command, ts.Args)
	for _, k := range slices.Sorted(maps.Keys(ts.Env)) {
		fmt.Fprintf(h, "%q=%q\n", k, ts.Env[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// serve is the endpoint: POST one JSON-RPC message; a request is answered
// with its response (application/json), a notification or a response with
// 202. GET (no server-to-client stream is offered) and DELETE get 405.
func (h *toolHTTP) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	h.mu.Lock()
	var br *toolBridge
	for t, b := range h.byToken {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			br = b
		}
	}
	h.mu.Unlock()
	if br == nil {
		http.Error(w, "unknown or missing bearer token", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST: this server offers no event stream", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m, err := jsonrpcframe.Parse(body)
	if err != nil {
		http.Error(w, "not one JSON-RPC message: "+err.Error(), http.StatusBadRequest)
		return
	}
	if m.Kind() != jsonrpcframe.KindRequest {
		if err := br.send(m); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), toolHTTPTimeout)
	defer cancel()
	resp, err := br.call(ctx, m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := resp.MarshalJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// close stops the listener and every tool server process.
func (h *toolHTTP) close(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	srv, served := h.srv, h.served
	bridges := make([]*toolBridge, 0, len(h.byKey))
	for _, b := range h.byKey {
		bridges = append(bridges, b)
	}
	h.mu.Unlock()
	if srv != nil {
		_ = srv.Shutdown(ctx)
		<-served // Serve returns as soon as Shutdown has closed the listener
	}
	for _, b := range bridges {
		b.stop()
	}
}

// toolBridge is one tool server behind the http endpoint: its stdio
// process, and the requests waiting for its answers (renumbered, so that
// requests of several HTTP clients cannot collide).
type toolBridge struct {
	spec  backend.ToolServer
	token string
	log   *slog.Logger

	mu      sync.Mutex
	proc    *toolProc
	next    int64
	pending map[int64]chan *jsonrpcframe.Message
}

// toolProc is a running tool server process, supervised as every child
// is (childproc: its own process group, stderr to the log).
type toolProc struct {
	proc *childproc.Process
	w    jsonrpcframe.Writer
	wmu  sync.Mutex
	done chan struct{} // closed when its stdout ended
}

// running returns the live process, starting one when there is none.
// Called with b.mu held.
func (b *toolBridge) running() (*toolProc, error) {
	if p := b.proc; p != nil {
		select {
		case <-p.done:
		default:
			return p, nil
		}
	}
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(b.spec.Env)) {
		env = append(env, k+"="+b.spec.Env[k])
	}
	proc, err := childproc.Start(childproc.Config{
		Name:  "tool server " + b.spec.Name,
		Spec:  childproc.Spec{Path: b.spec.Command, Args: b.spec.Args, Env: env},
		Grace: time.Second, Logger: b.log,
	})
	if err != nil {
		return nil, fmt.Errorf("starting tool server %s: %w", b.spec.Name, err)
	}
	p := &toolProc{proc: proc, w: jsonrpcframe.NewLineWriter(proc), done: make(chan struct{})}
	b.proc = p
	if b.pending == nil {
		b.pending = map[int64]chan *jsonrpcframe.Message{}
	}
	go b.read(p)
	return p, nil
}

// read delivers the process's answers; its requests and notifications to
// the client are answered or dropped (no stream to send them on).
func (b *toolBridge) read(p *toolProc) {
	defer func() {
		p.proc.StdoutDone()
		close(p.done)
	}()
	r := jsonrpcframe.NewLineReader(p.proc.Stdout(), nil)
	for {
		m, err := r.Read()
		if err != nil {
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				continue
			}
			return
		}
		switch m.Kind() {
		case jsonrpcframe.KindResponse:
			n, ok := m.ID.Int64()
			b.mu.Lock()
			ch := b.pending[n]
			delete(b.pending, n)
			b.mu.Unlock()
			if ok && ch != nil {
				ch <- m
			}
		case jsonrpcframe.KindRequest:
			e, _ := json.Marshal(map[string]any{"code": jsonrpcframe.CodeMethodNotFound, "message": "method not found: " + m.Method})
			p.write(&jsonrpcframe.Message{Versioned: true, ID: m.ID, Error: e})
		}
	}
}

func (p *toolProc) write(m *jsonrpcframe.Message) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.w.Write(m)
}

// send passes a notification or a response on.
func (b *toolBridge) send(m *jsonrpcframe.Message) error {
	b.mu.Lock()
	p, err := b.running()
	b.mu.Unlock()
	if err != nil {
		return err
	}
	return p.write(m)
}

// call passes a request on and returns its response with the caller's id.
func (b *toolBridge) call(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	b.mu.Lock()
	p, err := b.running()
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	b.next++
	n := b.next
	ch := make(chan *jsonrpcframe.Message, 1)
	b.pending[n] = ch
	b.mu.Unlock()
	fwd := *m
	fwd.ID = jsonrpcframe.IntID(n)
	if err := p.write(&fwd); err != nil {
		b.forget(n)
		return nil, fmt.Errorf("tool server %s: %w", b.spec.Name, err)
	}
	select {
	case resp := <-ch:
		out := *resp
		out.ID = m.ID
		return &out, nil
	case <-p.done:
		b.forget(n)
		return nil, fmt.Errorf("tool server %s exited", b.spec.Name)
	case <-ctx.Done():
		b.forget(n)
		return nil, fmt.Errorf("tool server %s: no answer: %w", b.spec.Name, ctx.Err())
	}
}

func (b *toolBridge) forget(n int64) {
	b.mu.Lock()
	delete(b.pending, n)
	b.mu.Unlock()
}

// stop ends the process: stdin closed, SIGTERM to its group a second
// later, SIGKILL a second after that.
func (b *toolBridge) stop() {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.proc.Stop(context.Background())
	<-p.done
}
