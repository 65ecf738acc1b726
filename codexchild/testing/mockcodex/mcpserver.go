package mockcodex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// mcpServer speaks codex mcp-server 0.153.4.
//
// Design notes: one goroutine reads stdin and routes every message without
// blocking: requests that are answered at once are answered there; a
// tools/call is queued on its thread, whose own goroutine runs the turns one
// at a time; answers to our elicitation/create requests are handed to the
// turn waiting for them. Everything written to stdout goes through
// process.out, one message at a time.
type mcpServer struct {
	p           *process
	initialized bool // reader goroutine only

	mu      sync.Mutex
	threads map[string]*mcpThread
	calls   map[string]*mcpCall           // running or queued tools/call by id text
	pending map[int64]*pendingElicitation // our requests awaiting an answer
}

type pendingElicitation struct {
	callID string
	ch     chan *jsonrpcframe.Message // nil once the turn gave up waiting
}

type mcpThread struct {
	core   *threadCore
	jobs   chan *mcpCall
	config map[string]any
	stale  *jsonrpcframe.ID // request id of the last cancelled/aborted turn (s.mu)
}

type mcpCall struct {
	id        jsonrpcframe.ID
	th        *mcpThread
	prompt    string
	first     bool
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled bool // s.mu

	staleID   *jsonrpcframe.ID // stale-listener mode: events alternate with this id
	staleMode string
	evN       int
}

func newMCPServer(p *process) *mcpServer {
	return &mcpServer{p: p, threads: map[string]*mcpThread{}, calls: map[string]*mcpCall{}, pending: map[int64]*pendingElicitation{}}
}

func (s *mcpServer) serve(in jsonrpcframe.Reader) { readLoop(s.p, in, "codex_mcp_server", s.dispatch) }

// readLoop reads messages from in until it ends, logs each as received
// and dispatches it; a line that is no message is logged as Codex's module
// (target) logs it and skipped.
func readLoop(p *process, in jsonrpcframe.Reader, target string, dispatch func(*jsonrpcframe.Message)) {
	for {
		m, err := in.Read()
		if err != nil {
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				logReceived(p, nil, me.Raw)
				p.logf("ERROR", target, "Failed to deserialize JSON-RPC message: %s", serdeReadError(me))
				continue
			}
			return
		}
		logReceived(p, m, nil)
		dispatch(m)
	}
}

// serdeReadError phrases a read error like serde_json does in Codex's log.
func serdeReadError(me *jsonrpcframe.MessageError) string {
	if errors.Is(me, jsonrpcframe.ErrParse) {
		return "expected value at line 1 column 1"
	}
	return "data did not match any variant of untagged enum JsonRpcMessage"
}

func (s *mcpServer) respond(id jsonrpcframe.ID, result any) {
	m, err := jsonrpcframe.NewResponse(id, mustMarshal(result))
	if err == nil {
		s.p.out.send(m)
	}
}

func (s *mcpServer) respondError(id jsonrpcframe.ID, code int64, msg string, data any) {
	e := &jsonrpcframe.Error{Code: code, Message: msg}
	if data != nil {
		e.Data = mustMarshal(data)
	}
	s.p.out.send(jsonrpcframe.NewErrorResponse(id, e))
}

func (s *mcpServer) dispatch(m *jsonrpcframe.Message) {
	switch m.Kind() {
	case jsonrpcframe.KindRequest:
		switch m.Method {
		case "initialize":
			s.initialize(m)
		case "ping":
			s.respond(m.ID, obj{})
		case "tools/list":
			s.respond(m.ID, json.RawMessage(mcpToolsJSON))
		case "tools/call":
			s.toolsCall(m)
		case "resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
			"resources/unsubscribe", "prompts/list", "prompts/get", "logging/setLevel", "completion/complete":
			// Codex logs these and never answers.
			s.p.logf("INFO", "codex_mcp_server::message_processor", "%s -> params: %s", m.Method, m.Params)
		default:
			s.respondError(m.ID, jsonrpcframe.CodeMethodNotFound, "method not found: "+m.Method, o("method", m.Method))
		}
	case jsonrpcframe.KindNotification:
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
				s.cancelCall(string(p.RequestID))
			}
		}
	case jsonrpcframe.KindResponse:
		s.answer(m)
	}
}

func (s *mcpServer) initialize(m *jsonrpcframe.Message) {
	if s.initialized {
		s.respondError(m.ID, jsonrpcframe.CodeInvalidRequest, "initialize called more than once", nil)
		return
	}
	s.initialized = true
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
		ClientInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(m.Params, &p)
	pv := p.ProtocolVersion
	if len(pv) == 0 {
		pv = json.RawMessage(`"2025-06-18"`)
	}
	s.respond(m.ID, o("protocolVersion", pv, "capabilities", o("tools", o("listChanged", true)),
		"serverInfo", o("name", "codex-mcp-server", "title", "Codex", "version", s.p.opts.version,
			"user_agent", userAgent("codex_cli_rs", s.p.opts.version, p.ClientInfo.Name, p.ClientInfo.Version))))
}

// Tool results.
func textContent(text string) []any { return []any{o("type", "text", "text", text)} }

func errorResult(text string) obj { return o("isError", true, "content", textContent(text)) }

func errorResultThread(text, thread string) obj {
	return errorResult(text).with("structuredContent", o("threadId", thread, "content", text))
}

func okResult(text, thread string) obj {
	return o("structuredContent", o("threadId", thread, "content", text), "content", textContent(text))
}

func (s *mcpServer) toolsCall(m *jsonrpcframe.Message) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch p.Name {
	case "codex":
		s.codexTool(m.ID, p.Arguments)
	case "codex-reply":
		s.replyTool(m.ID, p.Arguments)
	default:
		s.respond(m.ID, errorResult(fmt.Sprintf("Unknown tool '%s'", p.Name)))
	}
}

// codexArgs are the codex tool's arguments.
type codexArgs struct {
	prompt, model, cwd, approvalPolicy, sandbox *string
	baseInstructions, developerInstructions     *string
	compactPrompt                               *string
	config                                      map[string]any
}

var codexFields = []string{"prompt", "model", "cwd", "approval-policy", "sandbox", "config", "base-instructions", "developer-instructions", "compact-prompt"}

// parseCodexArgs decodes the arguments like serde with deny_unknown_fields:
// members in input order, the first error wins.
func parseCodexArgs(raw json.RawMessage) (*codexArgs, string) {
	a := &codexArgs{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "invalid type: " + serdeType(raw) + ", expected struct CodexToolCallParam"
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err.Error()
		}
		key, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err.Error()
		}
		str := func(dst **string, variants ...string) string {
			if string(v) == "null" && key != "prompt" {
				return ""
			}
			var x string
			if json.Unmarshal(v, &x) != nil {
				return "invalid type: " + serdeType(v) + ", expected a string"
			}
			if len(variants) > 0 {
				ok := false
				for _, vv := range variants {
					ok = ok || vv == x
				}
				if !ok {
					return fmt.Sprintf("unknown variant `%s`, expected %s", x, serdeOneOf(variants))
				}
			}
			*dst = &x
			return ""
		}
		var msg string
		switch key {
		case "prompt":
			msg = str(&a.prompt)
		case "model":
			msg = str(&a.model)
		case "cwd":
			msg = str(&a.cwd)
		case "approval-policy":
			msg = str(&a.approvalPolicy, "on-request", "never")
		case "sandbox":
			msg = str(&a.sandbox, "read-only", "workspace-write", "danger-full-access")
		case "base-instructions":
			msg = str(&a.baseInstructions)
		case "developer-instructions":
			msg = str(&a.developerInstructions)
		case "compact-prompt":
			msg = str(&a.compactPrompt)
		case "config":
			if string(v) != "null" && json.Unmarshal(v, &a.config) != nil {
				msg = "invalid type: " + serdeType(v) + ", expected a map"
			}
		default:
			msg = fmt.Sprintf("unknown field `%s`, expected %s", key, serdeOneOf(codexFields))
		}
		if msg != "" {
			return nil, msg
		}
	}
	if a.prompt == nil {
		return nil, "missing field `prompt`"
	}
	return a, ""
}

func serdeOneOf(v []string) string {
	if len(v) == 2 {
		return fmt.Sprintf("`%s` or `%s`", v[0], v[1])
	}
	q := make([]string, len(v))
	for i, x := range v {
		q[i] = "`" + x + "`"
	}
	return "one of " + strings.Join(q, ", ")
}

// serdeType names a JSON value like serde's "invalid type" errors.
func serdeType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "unit"
	}
	switch v[0] {
	case '{':
		return "map"
	case '[':
		return "sequence"
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		return fmt.Sprintf("string %q", s)
	case 't', 'f':
		return "boolean `" + string(v) + "`"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "floating point `" + string(v) + "`"
	}
	if v[0] == '-' {
		return "integer `" + string(v) + "`"
	}
	return "integer `" + string(v) + "`"
}

func (s *mcpServer) codexTool(id jsonrpcframe.ID, raw json.RawMessage) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		s.respond(id, errorResult("Missing arguments for codex tool-call; the `prompt` field is required."))
		return
	}
	a, msg := parseCodexArgs(raw)
	if msg != "" {
		s.p.logf("ERROR", "codex_mcp_server::message_processor", "Failed to parse configuration for Codex tool: %s", msg)
		s.respond(id, errorResult("Failed to parse configuration for Codex tool: "+msg))
		return
	}
	cfg := expandConfig(a.config)
	pick := func(arg *string, key, def string) string {
		if arg != nil {
			return *arg
		}
		if v, ok := cfg[key].(string); ok {
			return v
		}
		return def
	}
	wd, _ := os.Getwd()
	cwd := pick(a.cwd, "cwd", wd)
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(wd, cwd)
	}
	core := newThreadCore(newUUIDv7(), filepath.Clean(cwd),
		pick(a.approvalPolicy, "approval_policy", s.p.cfg.approvalPolicy),
		pick(a.sandbox, "sandbox_mode", s.p.cfg.sandboxMode),
		pick(a.model, "model", s.p.cfg.model))
	core.env = shellEnv(cfg)
	th := &mcpThread{core: core, jobs: make(chan *mcpCall, 256), config: cfg}
	s.mu.Lock()
	s.threads[core.id] = th
	s.mu.Unlock()
	s.p.wg.Add(1)
	go s.worker(th)
	s.enqueue(th, id, *a.prompt, true)
}

func (s *mcpServer) replyTool(id jsonrpcframe.ID, raw json.RawMessage) {
	var a struct {
		Prompt         *string `json:"prompt"`
		ThreadID       *string `json:"threadId"`
		ConversationID *string `json:"conversationId"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || a.Prompt == nil {
		msg := "missing field `prompt`"
		if err != nil {
			msg = err.Error()
		}
		s.respond(id, errorResult("Failed to parse configuration for Codex tool: "+msg))
		return
	}
	tid := a.ThreadID
	if tid == nil {
		tid = a.ConversationID
	}
	if tid == nil {
		text := "Failed to parse thread_id: either threadId or conversationId must be provided"
		s.p.logf("ERROR", "codex_mcp_server::message_processor", "%s", text)
		s.respond(id, errorResult(text))
		return
	}
	canon, err := parseUUID(*tid)
	if err != nil {
		text := "Failed to parse thread_id: " + err.Error()
		s.p.logf("ERROR", "codex_mcp_server::message_processor", "%s", text)
		s.respond(id, errorResult(text))
		return
	}
	s.mu.Lock()
	th := s.threads[canon]
	s.mu.Unlock()
	if th == nil {
		text := "Session not found for thread_id: " + canon
		s.p.logf("WARN", "codex_mcp_server::message_processor", "%s", text)
		s.respond(id, errorResultThread(text, canon))
		return
	}
	s.enqueue(th, id, *a.Prompt, false)
}

func (s *mcpServer) enqueue(th *mcpThread, id jsonrpcframe.ID, prompt string, first bool) {
	ctx, cancel := context.WithCancel(s.p.ctx)
	c := &mcpCall{id: id, th: th, prompt: prompt, first: first, ctx: ctx, cancel: cancel}
	s.mu.Lock()
	s.calls[id.String()] = c
	s.mu.Unlock()
	select {
	case th.jobs <- c:
	default:
		s.p.logf("ERROR", "codex_mcp_server", "too many queued turns on thread %s", th.core.id)
	}
}

// cancelCall handles notifications/cancelled: the turn is interrupted and
// the request is never answered.
func (s *mcpServer) cancelCall(idText string) {
	s.mu.Lock()
	c := s.calls[idText]
	if c != nil {
		c.cancelled = true
	}
	s.mu.Unlock()
	if c != nil {
		c.cancel()
	}
}

// answer routes a client response to the turn waiting for it.
func (s *mcpServer) answer(m *jsonrpcframe.Message) {
	n, ok := m.ID.Int64()
	s.mu.Lock()
	pe := s.pending[n]
	if ok && pe != nil && pe.ch != nil {
		delete(s.pending, n)
	}
	s.mu.Unlock()
	switch {
	case !ok || pe == nil:
		s.p.logf("WARN", "codex_mcp_server::message_processor", "response to unknown request id %s", m.ID)
	case pe.ch == nil:
		s.p.logf("WARN", "codex_core::session", "No pending approval found for call_id: %s", pe.callID)
	default:
		pe.ch <- m
	}
}

func (s *mcpServer) worker(th *mcpThread) {
	defer s.p.wg.Done()
	for {
		select {
		case <-s.p.ctx.Done():
			return
		case c := <-th.jobs:
			s.mu.Lock()
			skip := c.cancelled
			s.mu.Unlock()
			if !skip {
				s.runCall(c)
			}
			s.mu.Lock()
			delete(s.calls, c.id.String())
			s.mu.Unlock()
			c.cancel()
		}
	}
}
