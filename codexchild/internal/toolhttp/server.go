package toolhttp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// requestTimeout bounds the answer of a tool server to one request.
const requestTimeout = 2 * time.Minute

// Config configures a Server.
type Config struct {
	// Host is the host whose agents use the endpoints: the listener is
	// forwarded to its loopback and Endpoint gives URLs there. optional:
	// nil gives URLs on this machine's loopback.
	Host *sshhost.Host
	// Logger receives the server's log and the tool servers' stderr.
	// optional: nil discards.
	Logger *slog.Logger
}

// Endpoint is where an agent reaches one tool server.
type Endpoint struct {
	// Name is the tool server's name (backend.ToolServer.Name).
	Name string
	// URL is the endpoint, on the agent's loopback: http://127.0.0.1:<port>/mcp.
	URL string
	// Token is the bearer token every request must carry
	// (Authorization: Bearer <Token>).
	Token string
}

// Header is the Authorization header's value: "Bearer <Token>".
func (e Endpoint) Header() string { return "Bearer " + e.Token }

// Server serves tool servers over loopback HTTP; see the package doc.
type Server struct {
	host *sshhost.Host
	log  *slog.Logger

	mu      sync.Mutex
	srv     *http.Server
	served  chan struct{} // closed when srv's Serve has returned
	addr    string        // the listener's address here
	fwd     *sshhost.Forward
	byKey   map[string]*bridge
	byToken map[string]*bridge
	closed  bool
}

// New returns a Server; nothing listens before the first Endpoint.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{host: cfg.Host, log: log, byKey: map[string]*bridge{}, byToken: map[string]*bridge{}}
}

// Endpoint returns the endpoint of ts, starting the listener (and, with a
// Host, its forward to the host) when it is not running. With a Host it
// fails, with the host's *sshhost.Error, while the connection is down.
func (s *Server) Endpoint(ctx context.Context, ts backend.ToolServer) (Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Endpoint{}, backend.ErrClosed
	}
	if s.srv == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Endpoint{}, fmt.Errorf("serving the tool servers over http: %w", err)
		}
		s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
		s.addr = ln.Addr().String()
		srv, served := s.srv, make(chan struct{})
		s.served = served
		go func() { // joined by Close
			defer close(served)
			_ = srv.Serve(ln)
		}()
		s.log.Info("tool servers served over http", "addr", s.addr)
	}
	if s.host != nil && s.fwd == nil {
		// The forward is made under mu: one per Server. A reconnect
		// makes it again by itself (sshhost).
		f, err := s.host.Forward(ctx, s.addr)
		if err != nil {
			return Endpoint{}, fmt.Errorf("the team-mail tools for host %s: %w", s.host.Name(), err)
		}
		s.fwd = f
	}
	key := toolKey(ts)
	br := s.byKey[key]
	if br == nil {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		br = &bridge{spec: ts, token: hex.EncodeToString(b), log: s.log.With("tool_server", ts.Name)}
		s.byKey[key], s.byToken[br.token] = br, br
	}
	addr := s.addr
	if s.fwd != nil {
		addr = "127.0.0.1:" + strconv.Itoa(s.fwd.Port())
	}
	return Endpoint{Name: ts.Name, URL: "http://" + addr + "/mcp", Token: br.token}, nil
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
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	var br *bridge
	for t, b := range s.byToken {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			br = b
		}
	}
	s.mu.Unlock()
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
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
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

// Close stops the listener, cancels the forward and stops every tool
// server process. Endpoint fails with backend.ErrClosed afterwards.
func (s *Server) Close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	srv, served, fwd := s.srv, s.served, s.fwd
	bridges := make([]*bridge, 0, len(s.byKey))
	for _, b := range s.byKey {
		bridges = append(bridges, b)
	}
	s.mu.Unlock()
	if fwd != nil {
		if err := fwd.Close(ctx); err != nil {
			s.log.Debug("cancelling the tool servers' forward", "err", err)
		}
	}
	if srv != nil {
		_ = srv.Shutdown(ctx)
		<-served // Serve returns as soon as Shutdown has closed the listener
	}
	for _, b := range bridges {
		b.stop()
	}
}
