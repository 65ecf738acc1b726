package mockacp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// session is one session of the mock; its fields are guarded by agent.mu.
type session struct {
	id      string
	cwd     string
	mode    string
	model   string
	specs   []serverSpec         // the MCP servers given at new or load
	servers map[string]mcpCaller // the servers started (stdio) or initialized (http) so far
	cancel  chan struct{}        // closed by session/cancel; nil between turns
	steered []string             // input _session/steering gave the running turn, not said yet
	hist    []entry              // the transcript (kept in MOCKACP_STATE)
}

// entry is one message of a transcript.
type entry struct {
	Role string `json:"role"` // "user" or "agent"
	Text string `json:"text"`
}

// saved is a session's file in MOCKACP_STATE.
type saved struct {
	Cwd     string  `json:"cwd"`
	History []entry `json:"history"`
}

// serverSpec is an MCP server as session/new gives it.
type serverSpec struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Command string `json:"command"`
	Args    []string
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	URL     string `json:"url"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
}

var models = []string{"mock-small", "mock-large"}

func (s *session) modes() map[string]any {
	return map[string]any{"currentModeId": s.mode, "availableModes": []map[string]string{
		{"id": "auto", "name": "Auto"}, {"id": "default", "name": "Default"}}}
}

func (s *session) configOptions() []any {
	var opts []any
	for _, m := range models {
		opts = append(opts, map[string]any{"value": m, "name": m})
	}
	return []any{map[string]any{"id": "model", "name": "Model", "type": "select", "currentValue": s.model, "options": opts}}
}

func (a *agent) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *agent) handle(m message) {
	var p struct {
		SessionID  string          `json:"sessionId"`
		ModeID     string          `json:"modeId"`
		ConfigID   string          `json:"configId"`
		Value      any             `json:"value"`
		Cwd        string          `json:"cwd"`
		MCPServers []serverSpec    `json:"mcpServers"`
		Prompt     json.RawMessage `json:"prompt"`
	}
	_ = json.Unmarshal(m.Params, &p)
	if httpOnly() && (m.Method == "session/new" || m.Method == "session/load" || m.Method == "session/resume") {
		for _, sp := range p.MCPServers {
			if sp.Type == "" {
				// As GitHub Copilot CLI 1.0.102 does.
				a.replyErr(m.ID, -32602, "Invalid params: stdio MCP servers are not supported ("+sp.Name+"); use an http server")
				return
			}
		}
	}
	switch m.Method {
	case "initialize":
		a.initialize(m)
	case "session/new":
		s := &session{id: newID(), cwd: p.Cwd, mode: "auto", model: models[0], specs: p.MCPServers, servers: map[string]mcpCaller{}}
		a.mu.Lock()
		a.sessions[s.id] = s
		a.mu.Unlock()
		a.save(s)
		a.reply(m.ID, map[string]any{"sessionId": s.id, "modes": s.modes(), "configOptions": s.configOptions()})
		// As real agents do, right after the answer.
		a.update(s.id, map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{}})
	case "session/load", "session/resume":
		env := map[string]string{"session/load": "MOCKACP_LOAD", "session/resume": "MOCKACP_RESUME"}[m.Method]
		switch a.capability(env) {
		case "off":
			a.replyErr(m.ID, -32601, "Method not found: "+m.Method)
			return
		case "fail":
			a.replyErr(m.ID, -32603, "Internal error: cannot "+m.Method+" (MOCKACP)")
			return
		}
		sv, ok := a.load(p.SessionID)
		if !ok {
			a.replyErr(m.ID, -32002, "Resource not found: "+p.SessionID)
			return
		}
		s := &session{id: p.SessionID, cwd: p.Cwd, mode: "auto", model: models[0], specs: p.MCPServers, servers: map[string]mcpCaller{}, hist: sv.History}
		a.mu.Lock()
		if old := a.sessions[s.id]; old != nil {
			a.mu.Unlock()
			a.replyErr(m.ID, -32602, "session "+s.id+" is loaded already")
			return
		}
		a.sessions[s.id] = s
		a.mu.Unlock()
		if m.Method == "session/load" {
			for _, h := range sv.History {
				kind := "user_message_chunk"
				if h.Role == "agent" {
					kind = "agent_message_chunk"
				}
				a.update(s.id, map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": h.Text}})
			}
		}
		a.reply(m.ID, map[string]any{"modes": s.modes(), "configOptions": s.configOptions()})
	case "session/close":
		a.mu.Lock()
		s := a.sessions[p.SessionID]
		delete(a.sessions, p.SessionID)
		a.mu.Unlock()
		if s != nil {
			for _, c := range s.servers {
				c.stop()
			}
		}
		a.reply(m.ID, map[string]any{})
	case "session/set_mode":
		s := a.session(p.SessionID)
		if s == nil || (p.ModeID != "auto" && p.ModeID != "default") {
			a.replyErr(m.ID, -32602, "Invalid params: no session or mode")
			return
		}
		a.mu.Lock()
		s.mode = p.ModeID
		a.mu.Unlock()
		a.reply(m.ID, map[string]any{})
		a.update(s.id, map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": p.ModeID})
	case "session/set_config_option":
		s := a.session(p.SessionID)
		v, _ := p.Value.(string)
		if s == nil || p.ConfigID != "model" || v == "" {
			a.replyErr(m.ID, -32602, "Invalid params: unknown config option "+p.ConfigID)
			return
		}
		a.mu.Lock()
		s.model = v
		opts := s.configOptions()
		a.mu.Unlock()
		a.reply(m.ID, map[string]any{"configOptions": opts})
		a.update(s.id, map[string]any{"sessionUpdate": "config_option_update", "configOptions": opts})
	case "_session/steering":
		a.steer(m.ID, p.SessionID, p.Prompt)
	case "session/prompt":
		s := a.session(p.SessionID)
		if s == nil {
			a.replyErr(m.ID, -32002, "Resource not found: "+p.SessionID)
			return
		}
		var blocks []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p.Prompt, &blocks)
		text := ""
		for _, b := range blocks {
			text += b.Text
		}
		a.prompt(m.ID, s, text)
	default:
		a.replyErr(m.ID, -32601, "Method not found: "+m.Method)
	}
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "mock-" + hex.EncodeToString(b)
}

// save writes the session's transcript to MOCKACP_STATE (when set).
func (a *agent) save(s *session) {
	if a.state == "" {
		return
	}
	a.mu.Lock()
	b, _ := json.Marshal(saved{Cwd: s.cwd, History: s.hist})
	a.mu.Unlock()
	tmp := filepath.Join(a.state, "."+s.id+".tmp")
	err := os.WriteFile(tmp, b, 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(a.state, s.id+".json"))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mockacp: saving session %s: %v\n", s.id, err)
	}
}

func (a *agent) load(id string) (saved, bool) {
	var sv saved
	if a.state == "" || filepath.Base(id) != id {
		return sv, false
	}
	b, err := os.ReadFile(filepath.Join(a.state, id+".json"))
	if err != nil || json.Unmarshal(b, &sv) != nil {
		return sv, false
	}
	return sv, true
}

// steer takes input for the session's running turn (_session/steering,
// with MOCKACP_STEERING=1), which says it after its current command;
// without a running turn it starts nothing and answers promptRequired, as
// claude-agent-acp does for idleBehavior "promptRequired".
func (a *agent) steer(id json.RawMessage, sid string, prompt json.RawMessage) {
	if os.Getenv("MOCKACP_STEERING") != "1" {
		a.replyErr(id, -32601, "Method not found: _session/steering")
		return
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(prompt, &blocks)
	text := ""
	for _, b := range blocks {
		text += b.Text
	}
	a.mu.Lock()
	s := a.sessions[sid]
	running := s != nil && s.cancel != nil
	if running {
		s.steered = append(s.steered, text)
	}
	a.mu.Unlock()
	switch {
	case s == nil:
		a.replyErr(id, -32002, "Resource not found: "+sid)
	case running:
		a.reply(id, map[string]any{"outcome": "injected"})
	default:
		a.reply(id, map[string]any{"outcome": "promptRequired", "reason": "noRunningTurn"})
	}
}
