package acp

import "encoding/json"

// The ACP v1 messages the client sends and the parts of the answers it
// reads (agentclientprotocol/agent-client-protocol schema/v1/schema.json).
// Only what the client uses is typed; what it passes on is kept raw.

// ProtocolVersion is the ACP major version this client speaks.
const ProtocolVersion = 1

// The methods.
const (
	methodInitialize      = "initialize"
	methodAuthenticate    = "authenticate"
	methodSessionNew      = "session/new"
	methodSessionLoad     = "session/load"
	methodSessionResume   = "session/resume"
	methodSessionClose    = "session/close"
	methodSessionPrompt   = "session/prompt"
	methodSessionCancel   = "session/cancel"
	methodSetMode         = "session/set_mode"
	methodSetConfigOption = "session/set_config_option"
	methodSessionUpdate   = "session/update"
	methodPermission      = "session/request_permission"
	// methodSteer is the steering extension (claude-agent-acp): input for
	// the running turn (steer.go).
	methodSteer = "_session/steering"
)

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         implementation     `json:"clientInfo"`
}

type clientCapabilities struct {
	FS       fsCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Title   string `json:"title,omitempty"`
}

type initializeResult struct {
	ProtocolVersion   int             `json:"protocolVersion"`
	AgentCapabilities json.RawMessage `json:"agentCapabilities"`
	AgentInfo         *implementation `json:"agentInfo"`
	AuthMethods       []AuthMethod    `json:"authMethods"`
	// Meta is the result's own _meta, beside agentCapabilities: where the
	// steering extension is advertised ({"steering":{"supported":true}}).
	Meta json.RawMessage `json:"_meta"`
}

// AuthMethod is one way the agent offers to authenticate.
type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Capabilities are what the agent advertised in initialize, as far as the
// client acts on them; Raw holds all of them as sent.
type Capabilities struct {
	LoadSession bool
	Resume      bool // sessionCapabilities.resume
	Close       bool // sessionCapabilities.close
	List        bool // sessionCapabilities.list
	MCPHTTP     bool // mcpCapabilities.http
	MCPSSE      bool // mcpCapabilities.sse
	Image       bool // promptCapabilities.image
	// Steering: the agent takes input for a running turn (the steering
	// extension, _session/steering, advertised as _meta.steering.supported
	// of the initialize result, not in agentCapabilities; Session.Steer).
	Steering bool
	Raw      json.RawMessage
}

// wireCapabilities is agentCapabilities as sent. A capability such as
// sessionCapabilities.resume is an object ({}) when supported; null or
// absent means unsupported.
type wireCapabilities struct {
	LoadSession         bool `json:"loadSession"`
	SessionCapabilities struct {
		Resume json.RawMessage `json:"resume"`
		Close  json.RawMessage `json:"close"`
		List   json.RawMessage `json:"list"`
	} `json:"sessionCapabilities"`
	MCPCapabilities struct {
		HTTP bool `json:"http"`
		SSE  bool `json:"sse"`
	} `json:"mcpCapabilities"`
	PromptCapabilities struct {
		Image bool `json:"image"`
	} `json:"promptCapabilities"`
}

// parseCapabilities reads agentCapabilities; a malformed value counts as
// no capability at all (the baseline every agent has).
func parseCapabilities(raw json.RawMessage) Capabilities {
	c := Capabilities{Raw: raw}
	var w wireCapabilities
	if len(raw) == 0 || json.Unmarshal(raw, &w) != nil {
		return c
	}
	present := func(r json.RawMessage) bool {
		return len(r) > 0 && string(r) != "null" && string(r) != "false"
	}
	c.LoadSession = w.LoadSession
	c.Resume = present(w.SessionCapabilities.Resume)
	c.Close = present(w.SessionCapabilities.Close)
	c.List = present(w.SessionCapabilities.List)
	c.MCPHTTP = w.MCPCapabilities.HTTP
	c.MCPSSE = w.MCPCapabilities.SSE
	c.Image = w.PromptCapabilities.Image
	return c
}

// MCPServer is one MCP server the agent is to connect to for the session:
// a stdio server (Type "": Command, Args, Env) or, when the agent
// advertises mcpCapabilities.http, an HTTP one (Type "http": URL,
// Headers); "sse" is the deprecated SSE transport.
type MCPServer struct {
	Type    string // "" (stdio), "http" or "sse"
	Name    string
	Command string // absolute path (stdio)
	Args    []string
	Env     []NameValue // stdio
	URL     string      // http, sse
	Headers []NameValue // http, sse
}

// NameValue is an environment variable or an HTTP header.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MarshalJSON writes the schema's shape: McpServerStdio has no type and
// requires args and env (as arrays, never null); McpServerHttp and
// McpServerSse require type, url and headers.
func (s MCPServer) MarshalJSON() ([]byte, error) {
	nv := func(v []NameValue) []NameValue {
		if v == nil {
			return []NameValue{}
		}
		return v
	}
	if s.Type == "" {
		args := s.Args
		if args == nil {
			args = []string{}
		}
		return json.Marshal(struct {
			Name    string      `json:"name"`
			Command string      `json:"command"`
			Args    []string    `json:"args"`
			Env     []NameValue `json:"env"`
		}{s.Name, s.Command, args, nv(s.Env)})
	}
	return json.Marshal(struct {
		Type    string      `json:"type"`
		Name    string      `json:"name"`
		URL     string      `json:"url"`
		Headers []NameValue `json:"headers"`
	}{s.Type, s.Name, s.URL, nv(s.Headers)})
}

type sessionParams struct {
	SessionID  string      `json:"sessionId,omitempty"`
	Cwd        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

type sessionResult struct {
	SessionID     string          `json:"sessionId"`
	Modes         *SessionModes   `json:"modes"`
	Models        *sessionModels  `json:"models"`
	ConfigOptions json.RawMessage `json:"configOptions"`
}

// sessionModels are the models an agent offers for a session and the
// current one (the unstable session-models extension); only the current
// one is read.
type sessionModels struct {
	CurrentModelID string `json:"currentModelId"`
}

// modelOf is the model a session/new, session/load or session/resume
// answer names: models.currentModelId, else the current value of the
// "model" config option; "" when neither says.
func (r sessionResult) modelOf() string {
	if r.Models != nil && r.Models.CurrentModelID != "" {
		return r.Models.CurrentModelID
	}
	var opts []struct {
		ID           string `json:"id"`
		CurrentValue any    `json:"currentValue"`
	}
	_ = json.Unmarshal(r.ConfigOptions, &opts)
	for _, o := range opts {
		if v, ok := o.CurrentValue.(string); ok && o.ID == "model" {
			return v
		}
	}
	return ""
}

// SessionModes are the modes an agent offers for a session and the one it
// is in.
type SessionModes struct {
	CurrentModeID  string `json:"currentModeId"`
	AvailableModes []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"availableModes"`
}

// has reports whether id is one of the available modes.
func (m *SessionModes) has(id string) bool {
	if m == nil {
		return false
	}
	for _, a := range m.AvailableModes {
		if a.ID == id {
			return true
		}
	}
	return false
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type promptResult struct {
	StopReason StopReason  `json:"stopReason"`
	Usage      *TurnTokens `json:"usage"`
}

type sessionIDParams struct {
	SessionID string `json:"sessionId"`
}

type setModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

type setConfigOptionParams struct {
	SessionID string `json:"sessionId"`
	ConfigID  string `json:"configId"`
	Value     any    `json:"value"`
}

// StopReason is why a turn ended, as the agent said.
type StopReason string

// The stop reasons of ACP v1.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)
