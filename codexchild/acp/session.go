package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// SessionParams open a session.
type SessionParams struct {
	// Cwd is the session's working directory; it must be absolute.
	// Required.
	Cwd string
	// MCPServers are the MCP servers the agent connects to for the
	// session (the team-mail tools). optional.
	MCPServers []MCPServer
	// Mode is set with session/set_mode once the session is open (for
	// example "default" for claude-agent-acp, whose own default "auto"
	// approves by itself); it must be a mode the agent offers. optional.
	Mode string
	// ConfigOptions are set with session/set_config_option, in order.
	// optional.
	ConfigOptions []ConfigOption
}

// ConfigOption is one session configuration value to set.
type ConfigOption struct {
	ID    string
	Value any
}

// Session is one ACP session of a client: a conversation the agent keeps.
type Session struct {
	c  *Client
	id string

	// Guarded by c.mu:
	modes         *SessionModes
	configOptions json.RawMessage
	model         string // the model the agent named, or the one set since
	turn          *turn  // the running turn, or nil
	turns         int64
	lastCancelled bool      // the last turn that ended was cancelled
	loading       bool      // session/load is replaying history
	replay        []Message // the history replayed by session/load
	oldMessages   map[string]bool
	gone          bool // closed, or its client died
}

// Message is one message of a conversation, as replayed by session/load.
type Message struct {
	Role string // "user" or "agent"
	Text string
}

// ID returns the agent's id of the session.
func (s *Session) ID() string { return s.id }

// Modes returns the modes the agent offers and the current one (nil when
// it offers none).
func (s *Session) Modes() *SessionModes {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.modes == nil {
		return nil
	}
	m := *s.modes
	return &m
}

// ConfigOptions returns the session's configuration options as the agent
// sent them when the session was opened (the schema's SessionConfigOption
// list; nil when it sent none).
func (s *Session) ConfigOptions() json.RawMessage {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.configOptions
}

// Replayed returns the history the agent replayed on session/load.
func (s *Session) Replayed() []Message {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return append([]Message(nil), s.replay...)
}

// NewSession opens a session (session/new), then sets the mode and config
// options p asks for.
func (c *Client) NewSession(ctx context.Context, p SessionParams) (*Session, error) {
	if err := checkCwd(p.Cwd); err != nil {
		return nil, err
	}
	var s *Session
	_, err := c.call(ctx, methodSessionNew, sessionParams{Cwd: p.Cwd, MCPServers: nonNil(p.MCPServers)}, c.cfg.callTimeout(),
		func(raw json.RawMessage) {
			// On the reader, before the agent's next message is read.
			var res sessionResult
			if json.Unmarshal(raw, &res) != nil || res.SessionID == "" {
				return
			}
			s = c.addSessionLocked(res.SessionID)
			s.modes, s.configOptions, s.model = res.Modes, res.ConfigOptions, res.modelOf()
		})
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("acp %s: the answer has no sessionId", methodSessionNew)
	}
	return s, s.configure(ctx, p)
}

// LoadSession reopens a session of an earlier process (session/load, when
// the agent advertises loadSession). The history the agent replays
// arrives as events with Replay set and is kept (Session.Replayed); it is
// never taken for a turn's output.
func (c *Client) LoadSession(ctx context.Context, id string, p SessionParams) (*Session, error) {
	return c.reopen(ctx, methodSessionLoad, c.info.Capabilities.LoadSession, id, p)
}

// ResumeSession reopens a session of an earlier process without replay
// (session/resume, when the agent advertises sessionCapabilities.resume).
func (c *Client) ResumeSession(ctx context.Context, id string, p SessionParams) (*Session, error) {
	return c.reopen(ctx, methodSessionResume, c.info.Capabilities.Resume, id, p)
}

func (c *Client) reopen(ctx context.Context, method string, advertised bool, id string, p SessionParams) (*Session, error) {
	if !advertised {
		return nil, fmt.Errorf("acp %s: %w", method, ErrUnsupported)
	}
	if err := checkCwd(p.Cwd); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.sessions[id] != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("acp %s: session %s is open already", method, id)
	}
	s := c.addSessionLocked(id)
	s.loading = method == methodSessionLoad
	c.mu.Unlock()
	_, err := c.call(ctx, method, sessionParams{SessionID: id, Cwd: p.Cwd, MCPServers: nonNil(p.MCPServers)}, c.cfg.callTimeout(),
		func(raw json.RawMessage) {
			s.loading = false
			var res sessionResult
			if json.Unmarshal(raw, &res) == nil {
				s.modes, s.configOptions, s.model = res.Modes, res.ConfigOptions, res.modelOf()
			}
		})
	if err != nil {
		c.mu.Lock()
		s.gone = true
		delete(c.sessions, id)
		c.mu.Unlock()
		return nil, err
	}
	return s, s.configure(ctx, p)
}

// addSessionLocked registers a session; mu is held.
func (c *Client) addSessionLocked(id string) *Session {
	s := &Session{c: c, id: id, oldMessages: make(map[string]bool)}
	c.sessions[id] = s
	return s
}

func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("acp: session cwd %q is not an absolute path", cwd)
	}
	return nil
}

func nonNil(s []MCPServer) []MCPServer {
	if s == nil {
		return []MCPServer{}
	}
	return s
}

// configure sets the mode and config options of p.
func (s *Session) configure(ctx context.Context, p SessionParams) error {
	if p.Mode != "" {
		if err := s.SetMode(ctx, p.Mode); err != nil {
			return err
		}
	}
	for _, o := range p.ConfigOptions {
		if err := s.SetConfigOption(ctx, o.ID, o.Value); err != nil {
			return err
		}
	}
	return nil
}

// SetMode switches the session's mode (session/set_mode). A mode the agent
// did not offer is ErrUnsupported.
func (s *Session) SetMode(ctx context.Context, modeID string) error {
	c := s.c
	c.mu.Lock()
	offered := s.modes.has(modeID)
	c.mu.Unlock()
	if !offered {
		return fmt.Errorf("acp %s %q: %w (the agent offers no such mode)", methodSetMode, modeID, ErrUnsupported)
	}
	_, err := c.call(ctx, methodSetMode, setModeParams{SessionID: s.id, ModeID: modeID}, c.cfg.callTimeout(), func(json.RawMessage) {
		s.modes.CurrentModeID = modeID
	})
	return err
}

// SetConfigOption sets one session configuration option
// (session/set_config_option); a model set so is the session's Model.
func (s *Session) SetConfigOption(ctx context.Context, id string, value any) error {
	_, err := s.c.call(ctx, methodSetConfigOption, setConfigOptionParams{SessionID: s.id, ConfigID: id, Value: value}, s.c.cfg.callTimeout(),
		func(json.RawMessage) {
			if v, ok := value.(string); ok && id == "model" && v != "" {
				s.model = v // on the reader, c.mu held
			}
		})
	return err
}

// Model returns the model the agent said the session runs when it was
// opened (models.currentModelId, else the "model" config option's current
// value), or the one set with SetConfigOption since; "" when it said none.
func (s *Session) Model() string {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.model
}

// Close ends the session: session/close when the agent advertises it (a
// running turn is cancelled by it), else the client only forgets the
// session. Later turns on it fail.
func (s *Session) Close(ctx context.Context) error {
	if !s.c.info.Capabilities.Close {
		s.forget()
		return nil
	}
	return s.closeRemote(ctx, s.c.cfg.callTimeout())
}

func (s *Session) closeRemote(ctx context.Context, timeout time.Duration) error {
	_, err := s.c.call(ctx, methodSessionClose, sessionIDParams{SessionID: s.id}, timeout, nil)
	s.forget()
	return err
}

func (s *Session) forget() {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	s.gone = true
	if c.sessions[s.id] == s {
		delete(c.sessions, s.id)
	}
}

// foldLocked gives ev its turn and folds it into the running turn; mu is
// held.
func (s *Session) foldLocked(ev *Event) {
	switch {
	case s.loading:
		ev.Replay = true
		role := map[EventKind]string{EventUserMessage: "user", EventMessage: "agent"}[ev.Kind]
		if role == "" {
			return
		}
		if n := len(s.replay); n > 0 && s.replay[n-1].Role == role {
			s.replay[n-1].Text += ev.Text
		} else {
			s.replay = append(s.replay, Message{Role: role, Text: ev.Text})
		}
	case s.turn == nil, ev.MessageID != "" && s.oldMessages[ev.MessageID]:
		// After the turn's answer (or of an earlier turn's message): not
		// this turn's output.
		s.c.late++
		if ev.Kind == EventToolCall {
			ev.Tool.Created = false
		}
	default:
		ev.Turn = s.turn.n
		s.turn.fold(ev)
	}
}
