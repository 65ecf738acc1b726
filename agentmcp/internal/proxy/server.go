package proxy

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

//go:embed tools.json
var toolsJSON []byte

// supportedVersions are the MCP protocol versions the proxy speaks, newest
// first. initialize echoes the client's version when it is one of them.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// serverVersion is reported in serverInfo; set by the CLI.
var serverVersion = "dev"

// SetVersion sets the version reported in initialize.
func SetVersion(v string) {
	if v != "" {
		serverVersion = v
	}
}

// dispatch routes one inbound message. It never blocks on Codex or on files:
// requests that take time run on their own goroutine, tracked for shutdown
// and for cancellation by the client.
func (s *Server) dispatch(m *jsonrpcframe.Message, rt *router) {
	switch m.Kind() {
	case jsonrpcframe.KindResponse:
		if !s.client.deliver(m) {
			s.log.Warn("response from client for an unknown request", "id", m.ID.String())
		}
	case jsonrpcframe.KindNotification:
		s.notification(m)
	case jsonrpcframe.KindRequest:
		s.request(m, rt)
	}
}

func (s *Server) notification(m *jsonrpcframe.Message) {
	switch m.Method {
	case "notifications/initialized", "initialized":
		return
	case "notifications/cancelled":
		var p struct {
			RequestID jsonrpcframe.ID `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.RequestID.IsZero() {
			s.log.Warn("notifications/cancelled without a usable requestId", "params", string(m.Params))
			return
		}
		s.mu.Lock()
		cancel := s.inflight[p.RequestID]
		s.mu.Unlock()
		if cancel != nil {
			s.log.Info("client cancelled a request", "id", p.RequestID.String(), "reason", p.Reason)
			cancel()
		}
		return
	}
	if s.backend != nil {
		go func() { // Kind may probe the Codex binary: never on the router
			if s.backend.Kind() != "mcp-server" {
				return
			}
			if err := s.backend.Notify(context.Background(), m); err != nil {
				s.log.Debug("notification not forwarded to codex", "method", m.Method, "err", err)
			}
		}()
	}
}

func (s *Server) request(m *jsonrpcframe.Message, rt *router) {
	switch m.Method {
	case "initialize":
		s.initialize(m)
		return
	case "ping":
		s.client.reply(m.ID, struct{}{})
		return
	case "tools/list":
		s.client.reply(m.ID, json.RawMessage(s.toolList()))
		return
	case "resources/list":
		s.client.reply(m.ID, map[string]any{"resources": []any{}})
		return
	case "resources/templates/list":
		s.client.reply(m.ID, map[string]any{"resourceTemplates": []any{}})
		return
	case "prompts/list":
		s.client.reply(m.ID, map[string]any{"prompts": []any{}})
		return
	case "logging/setLevel":
		s.client.reply(m.ID, struct{}{})
		return
	case "resources/read", "prompts/get":
		// Codex never answers these (nor resources/list, prompts/list); the
		// proxy offers no resources or prompts.
		s.client.replyError(m.ID, newError(ErrInvalidParams, nil, "%s: this server has no resources or prompts", m.Method))
		return
	}
	ctx, ok := s.track(m.ID)
	if !ok {
		s.client.replyError(m.ID, newError(ErrInvalidSessionParams, nil, "the proxy is shutting down"))
		return
	}
	if m.Method != "tools/call" {
		go func() {
			defer s.untrack(m.ID)
			s.forward(ctx, m)
		}()
		return
	}
	c, err := s.parseToolCall(m)
	if err != nil {
		s.client.replyError(m.ID, err)
		s.untrack(m.ID)
		return
	}
	// Replies to a session are queued in read order; nothing blocks here
	// (a reply to an idle session may start on this goroutine, see router).
	c.router = rt
	s.startToolCall(ctx, c, func(res *toolResult, err error) {
		s.finishToolCall(ctx, c, res, err)
		s.untrack(m.ID)
	})
	if rt.gone {
		return
	}
	// Let the goroutine just started for the call run now, on this
	// processor, rather than after the router's next read of stdin.
	runtime.Gosched()
}

// track registers an in-flight client request; it reports false during
// shutdown.
func (s *Server) track(id jsonrpcframe.ID) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, false
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.inflight[id] = cancel
	s.wg.Add(1)
	return ctx, true
}

func (s *Server) untrack(id jsonrpcframe.ID) {
	s.mu.Lock()
	if cancel := s.inflight[id]; cancel != nil {
		cancel()
		delete(s.inflight, id)
	}
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) initialize(m *jsonrpcframe.Message) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.client.replyError(m.ID, newError(ErrInvalidParams, nil, "initialize: %v", err))
			return
		}
	}
	version := supportedVersions[0]
	for _, v := range supportedVersions {
		if v == p.ProtocolVersion {
			version = v
		}
	}
	el := len(p.Capabilities.Elicitation) > 0 && string(p.Capabilities.Elicitation) != "null"
	s.client.elicitation.Store(el)
	s.client.protocolVersion.Store(version)
	s.log.Info("mcp client initialized", "client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version,
		"protocol", version, "elicitation", el)
	s.client.reply(m.ID, map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}, "logging": map[string]any{}},
		"serverInfo":      map[string]any{"name": "atm-agent-mcp", "title": "ATM agent proxy for Codex", "version": serverVersion},
		"instructions": "Runs OpenAI Codex agents as named members of an ATM team. Start one with `codex` (identity, prompt), " +
			"continue it with `codex-reply` (agent_id), exchange team mail with atm_send/atm_read/atm_broadcast/atm_pending_count, " +
			"and manage sessions with agent_sessions/agent_status/agent_close.",
	})
}

// toolList returns the tools/list result: every tool, before any child
// exists.
func (s *Server) toolList() []byte {
	s.toolsOnce.Do(func() {
		var tools []json.RawMessage
		if err := json.Unmarshal(toolsJSON, &tools); err != nil {
			panic(fmt.Sprintf("tools.json: %v", err)) // a build defect, caught by tests
		}
		b, _ := json.Marshal(map[string]any{"tools": tools})
		s.toolsList = b
	})
	return s.toolsList
}

// forward sends a request the proxy does not handle to the Codex child
// verbatim (mcp-server backend only) and returns the child's reply.
func (s *Server) forward(ctx context.Context, m *jsonrpcframe.Message) {
	if s.backend == nil || s.backend.Kind() != "mcp-server" {
		s.client.replyError(m.ID, newError(ErrMethodNotFound, map[string]any{"method": m.Method}, "method not found: %s", m.Method))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	resp, err := s.backend.Forward(ctx, m)
	if err != nil {
		s.client.replyError(m.ID, s.backendError(err))
		return
	}
	out := *resp
	out.ID = m.ID
	if resp.Error != nil {
		s.client.replyError(m.ID, &childError{raw: resp.Error})
		return
	}
	if err := s.client.write(&out); err != nil {
		s.log.Debug("forwarded reply not delivered", "err", err)
	}
}

// serveLoop reads the client for rt until EOF, a read error or ctx's end,
// or until a turn keeps rt's goroutine (the role went to another).
func (s *Server) serveLoop(rt *router) error {
	for {
		m, err := rt.r.Read()
		if err != nil {
			var bad *jsonrpcframe.MessageError
			switch {
			case errors.As(err, &bad):
				s.log.Warn("bad message from client", "err", bad.Error())
				if errors.Is(err, jsonrpcframe.ErrBatch) {
					s.client.replyError(jsonrpcframe.NullID(), &rpcError{kind: &codeError{jsonrpcframe.CodeInvalidRequest, "INVALID_REQUEST"},
						msg: "JSON-RPC batches are not supported; send one message at a time"})
					continue
				}
				if err := s.client.write(bad.Response()); err != nil {
					s.log.Debug("parse error reply not delivered", "err", err)
				}
				continue
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				s.log.Info("mcp client closed stdin")
				return nil
			default:
				return fmt.Errorf("read mcp client: %w", err)
			}
		}
		s.dispatch(m, rt)
		if rt.gone {
			return nil
		}
	}
}
