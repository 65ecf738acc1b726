package view

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.ParseFS(assets, "assets/index.html"))

// ServerConfig configures a Server.
type ServerConfig struct {
	// Team is what the page shows and answers through. required.
	Team *Team
	// TeamName is the team's name, for the page's title.
	TeamName string
	// Port is the loopback port. optional: 0 picks a free one.
	Port int
	// Token is the secret every request must carry (?token=). optional:
	// "" makes a random one.
	Token string
	// Logger receives the logs. optional: nil discards.
	Logger *slog.Logger
}

// Server serves the page of a Team on 127.0.0.1 only.
type Server struct {
	cfg    ServerConfig
	log    *slog.Logger
	ln     net.Listener
	srv    *http.Server
	host   string // 127.0.0.1:port, the only Host accepted
	origin string // http://127.0.0.1:port, the only Origin accepted

	mu       sync.Mutex           // guards pages and answered
	pages    map[string]time.Time // page tokens handed out
	answered map[string]bool      // serve/agent/approval answered from the page
}

// NewServer listens on 127.0.0.1 (Config.Port, or a free port).
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Team == nil {
		return nil, errors.New("view: no team")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Token == "" {
		cfg.Token = randomToken()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("view: listen: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "view"), ln: ln, host: ln.Addr().String(),
		pages: map[string]time.Time{}, answered: map[string]bool{}}
	s.origin = "http://" + s.host
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /app.js", s.asset("assets/app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", s.asset("assets/app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /api/state", s.state)
	mux.HandleFunc("POST /api/answer", s.answer)
	mux.HandleFunc("GET /api/diff", s.diff)
	s.srv = &http.Server{Handler: s.guard(mux), ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// URL is the address to open, with the token.
func (s *Server) URL() string { return s.origin + "/?token=" + s.cfg.Token }

// Addr is 127.0.0.1:port.
func (s *Server) Addr() string { return s.host }

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops serving; open event streams end.
func (s *Server) Shutdown(ctx context.Context) error {
	s.srv.SetKeepAlivesEnabled(false)
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return s.srv.Close()
	}
	return err
}

// guard refuses what is not for this page: every request must carry the
// token and name this loopback address and port as its Host (a page of
// another site that a DNS name rebound to 127.0.0.1 names its own host),
// and nothing may be embedded or read by another origin.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.Host != s.host {
			s.log.Warn("request refused: wrong Host", "host", r.Host, "path", r.URL.Path)
			http.Error(w, "wrong Host: this page answers only to "+s.host, http.StatusMisdirectedRequest)
			return
		}
		if !equal(r.URL.Query().Get("token"), s.cfg.Token) {
			s.log.Warn("request refused: wrong or missing token", "path", r.URL.Path)
			http.Error(w, "wrong or missing token: open the address atm-agent-mcp view printed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic("view: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// index serves the page with a page token of its own.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	pt := randomToken()
	s.mu.Lock()
	now := time.Now()
	for t, at := range s.pages {
		if now.Sub(at) > 24*time.Hour {
			delete(s.pages, t)
		}
	}
	s.pages[pt] = now
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	err := page.Execute(w, map[string]string{"Token": s.cfg.Token, "Page": pt, "Team": s.cfg.TeamName})
	if err != nil {
		s.log.Warn("writing the page", "err", err)
	}
}

func (s *Server) asset(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(b)
	}
}

// state answers the snapshot as JSON.
func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.cfg.Team.Snapshot())
}

// events streams the snapshot, then every update, as server-sent events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	snap, updates, cancel := s.cfg.Team.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A dropped stream is taken up again within half a second.
	if _, err := fmt.Fprint(w, "retry: 500\n\n"); err != nil {
		return
	}
	if err := writeEvent(w, "snapshot", snap); err != nil {
		return
	}
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case u, ok := <-updates:
			if !ok {
				return // too slow: the browser reconnects and starts again
			}
			// A burst is written as its last state per agent, with every
			// mail and serve change, in order, then flushed once.
			batch := []Update{u}
			for more := true; more; {
				select {
				case u, ok := <-updates:
					if !ok {
						more = false
						break
					}
					batch = append(batch, u)
				default:
					more = false
				}
			}
			if err := writeBatch(w, batch); err != nil {
				return
			}
			fl.Flush()
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// writeBatch writes updates, each agent's only at its last place.
func writeBatch(w http.ResponseWriter, batch []Update) error {
	last := map[string]int{}
	for i, u := range batch {
		if u.Type == "agent" {
			last[u.Agent.Serve+"/"+u.Agent.AgentID] = i
		}
	}
	for i, u := range batch {
		if u.Type == "agent" && last[u.Agent.Serve+"/"+u.Agent.AgentID] != i {
			continue
		}
		if err := writeEvent(w, u.Type, u); err != nil {
			return err
		}
	}
	return nil
}

func writeEvent(w http.ResponseWriter, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	return err
}

// answerRequest is the body of POST /api/answer.
type answerRequest struct {
	Serve      string `json:"serve"`
	AgentID    string `json:"agent_id"`
	ApprovalID string `json:"approval_id"`
	Decision   string `json:"decision"` // approve or deny
}

// answer answers an approval: a state change, so the request must also
// come from this page (its Origin) and carry a page token this server
// handed out; each approval is answered once from here (a replay is
// refused), and the serve that owns it decides whether it is still open.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != s.origin {
		s.log.Warn("answer refused: foreign Origin", "origin", r.Header.Get("Origin"))
		httpError(w, http.StatusForbidden, "answer refused: the request does not come from this page (Origin)")
		return
	}
	pt := r.Header.Get("X-Page-Token")
	s.mu.Lock()
	_, known := s.pages[pt]
	s.mu.Unlock()
	if pt == "" || !known {
		httpError(w, http.StatusForbidden, "answer refused: no page token of this server")
		return
	}
	var req answerRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64*1024)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "answer: "+err.Error())
		return
	}
	if req.Decision != "approve" && req.Decision != "deny" {
		httpError(w, http.StatusBadRequest, "answer: decision must be approve or deny")
		return
	}
	key := req.Serve + "/" + req.AgentID + "/" + req.ApprovalID
	s.mu.Lock()
	done := s.answered[key]
	s.answered[key] = true
	s.mu.Unlock()
	if done {
		httpError(w, http.StatusConflict, "approval "+req.ApprovalID+" was already answered from this page")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	err := s.cfg.Team.Answer(ctx, req.Serve, req.AgentID, req.ApprovalID, req.Decision, "the view")
	if err != nil {
		s.log.Info("answer refused by the serve", "serve", req.Serve, "approval_id", req.ApprovalID, "err", err)
		httpError(w, http.StatusConflict, err.Error())
		return
	}
	s.log.Info("approval answered from the page", "serve", req.Serve, "agent_id", req.AgentID, "approval_id", req.ApprovalID, "decision", req.Decision)
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"ok":true}`))
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": msg})
}
