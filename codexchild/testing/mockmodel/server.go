package mockmodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config configures a [Server]. The zero value is a working mock on a free
// loopback port with the built-in behaviour.
type Config struct {
	// Addr is the TCP address to listen on; "" means "127.0.0.1:0" (a free
	// loopback port).
	Addr string
	// Handler is optional: when set it is asked first for every
	// POST /v1/responses, and a non-nil Responder it returns writes the
	// answer. Returning nil falls through to Script and then [Default].
	Handler func(r *Request) Responder
	// Script is optional: keyword → Responder. When the last input item is a
	// message, the longest keyword contained in the last user text (ties: the
	// lexically smaller) picks the Responder, before the built-in keywords.
	Script map[string]Responder
	// KeepAlive is optional: the interval of keep-alive comments while a
	// stream waits; 0 means 500ms.
	KeepAlive time.Duration
	// Log is optional: when set, every request is written to it as one JSON
	// line {t, n, method, path, headers, has_auth, body} (Authorization left
	// out). nil means no log.
	Log io.Writer
	// Logger is optional: nil discards.
	Logger *slog.Logger
}

// Server is a running mock. Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	ln     net.Listener
	srv    *http.Server
	ctx    context.Context
	cancel context.CancelFunc
	served chan struct{}
	logMu  sync.Mutex // serializes writes to cfg.Log

	mu       sync.Mutex
	closed   bool
	active   sync.WaitGroup // running handlers; Add only under mu while !closed
	inFlight int            // running handlers, for InFlight
	reqs     []Request
	changed  chan struct{} // closed and replaced whenever reqs grows
	scriptKs []string      // Script keys, longest first
}

// Start listens and serves in the background until [Server.Close].
func Start(cfg Config) (*Server, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 500 * time.Millisecond
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mockmodel: listen on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:     cfg,
		log:     log.With("component", "mockmodel", "addr", ln.Addr().String()),
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		served:  make(chan struct{}),
		changed: make(chan struct{}),
	}
	for k := range cfg.Script {
		s.scriptKs = append(s.scriptKs, k)
	}
	sort.Slice(s.scriptKs, func(i, j int) bool {
		a, b := s.scriptKs[i], s.scriptKs[j]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}()
	return s, nil
}

// URL returns the base URL of the API, "http://127.0.0.1:PORT/v1", for a
// provider's base_url.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server: running streams (a SLOW wait included) end at once,
// and Close returns after every handler has returned. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return nil
	}
	s.cancel()
	err := s.srv.Close()
	<-s.served
	s.active.Wait()
	return err
}

// Requests returns a copy of every request recorded so far, in order. The
// Body maps and Header of the copies are shared and must not be modified.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitRequests waits until at least n requests were recorded and returns
// them all, or returns the context's error.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.reqs) >= n {
			reqs := append([]Request(nil), s.reqs...)
			s.mu.Unlock()
			return reqs, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("mockmodel: wait for %d requests: %w", n, ctx.Err())
		}
	}
}

// InFlight returns the number of requests being answered right now: a
// stream still open (a SLOW wait, say) counts until its handler returns.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// SawInput tells whether substr occurs in any text the model was given by any
// request so far (see [Request.InputTexts]).
func (s *Server) SawInput(substr string) bool { return s.CountInput(substr) > 0 }

// CountInput returns how many requests so far gave the model a text
// containing substr.
func (s *Server) CountInput(substr string) int {
	n := 0
	for _, r := range s.Requests() {
		for _, t := range r.InputTexts() {
			if strings.Contains(t, substr) {
				n++
				break
			}
		}
	}
	return n
}

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "mockmodel: closed", http.StatusServiceUnavailable)
		return
	}
	s.active.Add(1)
	s.inFlight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
		s.active.Done()
	}()

	raw, err := io.ReadAll(hr.Body)
	if err != nil {
		s.log.Debug("read body", "err", err)
		return
	}
	req := s.record(hr, raw)
	s.writeLog(&req)
	log := s.log.With("n", req.N)
	log.Debug("request", "method", req.Method, "path", req.Path, "last_user_text", truncate(req.LastUserText, 120),
		"last_item", req.LastItemType, "tools", len(req.ToolNames))

	path := strings.TrimSuffix(hr.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/models") && hr.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(marshal(map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}}}))
		return
	case strings.HasSuffix(path, "/responses") && hr.Method == http.MethodPost:
	case strings.HasSuffix(path, "/messages") && hr.Method == http.MethodPost && req.isMessages():
		s.answerMessages(w, hr, &req)
		return
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(marshal(map[string]any{"error": map[string]any{
			"message": "unsupported " + hr.Method + " " + hr.URL.Path, "type": "not_found"}}))
		return
	}

	st := &Stream{ctx: hr.Context(), w: w, rc: http.NewResponseController(w), n: req.N, keepAlive: s.cfg.KeepAlive}
	if err := s.responder(&req)(st, &req); err != nil {
		log.Debug("stream ended early", "err", err)
	}
}

// responder picks the answer: Handler, then Script, then Default.
func (s *Server) responder(r *Request) Responder {
	if s.cfg.Handler != nil {
		if rs := s.cfg.Handler(r); rs != nil {
			return rs
		}
	}
	if r.LastItemType == "message" {
		for _, k := range s.scriptKs {
			if strings.Contains(r.LastUserText, k) {
				return s.cfg.Script[k]
			}
		}
	}
	return Default
}

func (s *Server) record(hr *http.Request, raw []byte) Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := newRequest(len(s.reqs)+1, hr, raw)
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
	return req
}

func (s *Server) writeLog(r *Request) {
	if s.cfg.Log == nil {
		return
	}
	headers := map[string]string{}
	for k, v := range r.Header {
		if !strings.EqualFold(k, "Authorization") {
			headers[strings.ToLower(k)] = strings.Join(v, ", ")
		}
	}
	var body any = r.Body
	if r.Body == nil {
		body = truncate(string(r.RawBody), 2000)
	}
	line := marshal(map[string]any{
		"t":        float64(r.Time.UnixNano()) / 1e9,
		"n":        r.N,
		"method":   r.Method,
		"path":     r.Path,
		"headers":  headers,
		"has_auth": r.Header.Get("Authorization") != "",
		"body":     body,
	})
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if _, err := s.cfg.Log.Write(append(line, '\n')); err != nil {
		s.log.Warn("write request log", "err", err)
	}
}
