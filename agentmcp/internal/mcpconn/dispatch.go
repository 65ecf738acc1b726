package mcpconn

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// dispatch handles one message on the reading goroutine. It never waits on
// anything but a Handler's CallTool that has not released; it returns
// errReleased when that call gave the reading role away.
func (c *Conn) dispatch(m *jsonrpcframe.Message, rd *reader) error {
	if !m.Versioned {
		// jsonrpcframe reads Codex's unversioned messages too; an MCP client
		// must speak JSON-RPC 2.0.
		c.log.Warn("message from client without \"jsonrpc\": \"2.0\"; refused", "kind", m.Kind().String(), "method", m.Method)
		if m.Kind() == jsonrpcframe.KindRequest {
			c.out.replyError(m.ID, proxyerr.New(proxyerr.ErrInvalidRequest, nil, `the request has no "jsonrpc": "2.0" member (MCP speaks JSON-RPC 2.0)`))
		}
		return nil
	}
	switch m.Kind() {
	case jsonrpcframe.KindResponse:
		if !c.out.deliver(m) {
			c.log.Warn("response from client for an unknown request", "id", m.ID.String())
		}
	case jsonrpcframe.KindNotification:
		c.notification(m)
	case jsonrpcframe.KindRequest:
		return c.request(m, rd)
	}
	return nil
}

func (c *Conn) notification(m *jsonrpcframe.Message) {
	switch m.Method {
	case "notifications/initialized", "initialized":
		return
	case "notifications/cancelled":
		var p struct {
			RequestID jsonrpcframe.ID `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.RequestID.IsZero() {
			c.log.Warn("notifications/cancelled without a usable requestId", "params", string(m.Params))
			return
		}
		c.mu.Lock()
		e := c.inflight[p.RequestID]
		c.mu.Unlock()
		if e != nil {
			c.log.Info("client cancelled a request", "id", p.RequestID.String(), "reason", p.Reason)
			e.cancel()
		}
		return
	}
	if f, ok := c.cfg.Handler.(Forwarder); ok {
		f.Notify(m)
	}
}

func (c *Conn) request(m *jsonrpcframe.Message, rd *reader) error {
	var buf [8]jsonrpcframe.Member
	params, _ := jsonrpcframe.AppendMembers(buf[:0], m.Params)
	meta, err := c.requestMeta(params)
	if err != nil {
		c.replyErrorFor(m.ID, err, true)
		return nil
	}
	switch {
	case meta.modern && m.Method == "server/discover":
		c.log.Debug("server/discover", "client", meta.client, "protocol", meta.version)
		c.discover(m)
		return nil
	case meta.modern && m.Method == "subscriptions/listen":
		c.listen(m, params)
		return nil
	case meta.modern && modernMethodGone(m.Method):
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": m.Method},
			"%s is not part of MCP %s (stateless: no handshake, ping, log level or subscriptions)", m.Method, meta.version), true)
		return nil
	case m.Method == "server/discover" && c.cfg.Protocol == ProtocolLegacy:
		c.out.replyError(m.ID, proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": m.Method},
			"method not found: server/discover (this server speaks MCP up to %s: send initialize)", ProtocolVersions[0]))
		return nil
	case m.Method == "server/discover":
		c.out.replyError(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"_meta": metaVersion},
			"server/discover needs _meta[%q] (one of %v)", metaVersion, ModernVersions))
		return nil
	}
	if taskMethod(m.Method) {
		c.taskRequest(m, params, meta)
		return nil
	}
	if rh, ok := c.cfg.Handler.(ResourceHandler); ok && resourceMethod(m.Method) {
		c.resourceRequest(m, params, meta, rh)
		return nil
	}
	reply := c.out.reply
	if meta.modern {
		reply = c.replyModern
	}
	// emptyList answers a list method of what this server does not have.
	emptyList := func(key string) {
		result := map[string]any{key: []any{}}
		if meta.modern {
			for k, v := range cacheHints {
				result[k] = v
			}
		}
		reply(m.ID, result)
	}
	switch m.Method {
	case "initialize":
		c.initialize(m)
		return nil
	case "ping", "logging/setLevel":
		c.out.reply(m.ID, struct{}{})
		return nil
	case "tools/list":
		if meta.modern {
			c.out.reply(m.ID, json.RawMessage(c.toolsListModern))
		} else {
			c.out.reply(m.ID, json.RawMessage(c.toolsList))
		}
		return nil
	case "resources/list":
		emptyList("resources")
		return nil
	case "resources/templates/list":
		emptyList("resourceTemplates")
		return nil
	case "prompts/list":
		emptyList("prompts")
		return nil
	case "resources/read":
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, nil, "resources/read: this server has no resources"), meta.modern)
		return nil
	case "prompts/get":
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, nil, "prompts/get: this server has no prompts"), meta.modern)
		return nil
	}
	ctx, e, err := c.track(m.ID)
	if err != nil {
		c.replyErrorFor(m.ID, err, meta.modern)
		return nil
	}
	if m.Method != "tools/call" {
		go func() {
			defer c.untrack(m.ID, e)
			c.forward(ctx, m, meta.modern, e)
		}()
		return nil
	}
	call, err := c.parseToolCall(m, params, meta)
	if err != nil {
		c.forget(m.ID, e)
		c.replyErrorFor(m.ID, err, meta.modern)
		c.untrack(m.ID, e)
		return nil
	}
	call.ctx, call.rd, call.entry = ctx, rd, e
	res, err := c.cfg.Handler.CallTool(context.WithValue(ctx, callKey{}, call), call)
	kept := call.state.CompareAndSwap(holding, returned)
	c.finish(call, res, err)
	c.untrack(m.ID, e)
	if !kept {
		return errReleased
	}
	return nil
}

// finish answers a tools/call: the result or the error; nothing when the
// client cancelled the request or TryReplyNow answered it.
func (c *Conn) finish(call *ToolCall, res *ToolResult, err error) {
	call.Progress.finish() // no progress after the response
	if !call.answered.Load() && call.ctx.Err() == nil {
		c.forget(call.ID, call.entry) // the id is free once the client can read the answer
	}
	switch {
	case errors.Is(err, ErrAnswered) || call.answered.Load():
	case call.ctx.Err() != nil:
		c.log.Info("request cancelled by the client; no response sent", "id", call.ID.String(), "tool", call.Name)
	case err != nil:
		c.replyErrorFor(call.ID, err, call.Modern)
	case res == nil:
		c.replyErrorFor(call.ID, proxyerr.New(proxyerr.ErrInternal, nil, "tool %s returned no result", call.Name), call.Modern)
	case res.Input != nil && !call.Modern:
		c.out.replyError(call.ID, proxyerr.New(proxyerr.ErrInternal, nil, "tool %s asked for input from a client that cannot answer it", call.Name))
	case res.Task != nil && !call.Tasks:
		c.replyErrorFor(call.ID, proxyerr.New(proxyerr.ErrInternal, nil, "tool %s made a task for a client that did not declare the tasks extension", call.Name), call.Modern)
	default:
		c.out.reply(call.ID, call.resultJSON(res))
	}
}

// track registers a request being handled; it fails with the Refuse error,
// or when a request with the same id is still being handled (the client
// broke the rule that ids of requests in flight are unique: the second is
// refused, the first goes on untouched).
func (c *Conn) track(id jsonrpcframe.ID) (context.Context, *inflight, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse != nil {
		return nil, nil, c.refuse
	}
	if _, dup := c.inflight[id]; dup {
		return nil, nil, proxyerr.New(proxyerr.ErrInvalidRequest, map[string]any{"id": json.RawMessage(id.Raw())},
			"request id %s is already in use by a request in flight; use a new id for each request", id.String())
	}
	ctx, cancel := context.WithCancel(c.base)
	e := &inflight{cancel: cancel}
	c.inflight[id] = e
	c.wg.Add(1)
	return ctx, e, nil
}

// inflight is a request being handled: its cancel func.
type inflight struct{ cancel context.CancelFunc }

// forget frees the request's id (just before its answer is written: the
// client may use the id again as soon as it reads the answer); the request
// can no longer be cancelled by the client.
func (c *Conn) forget(id jsonrpcframe.ID, e *inflight) {
	c.mu.Lock()
	if c.inflight[id] == e {
		delete(c.inflight, id)
	}
	c.mu.Unlock()
}

// untrack ends the request: its id freed (if forget did not), its context
// cancelled.
func (c *Conn) untrack(id jsonrpcframe.ID, e *inflight) {
	c.forget(id, e)
	e.cancel()
	c.wg.Done()
}

func (c *Conn) initialize(m *jsonrpcframe.Message) {
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
			c.out.replyError(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, nil, "initialize: %v", err))
			return
		}
	}
	version := ProtocolVersions[0]
	for _, v := range ProtocolVersions {
		if v == p.ProtocolVersion {
			version = v
		}
	}
	el := len(p.Capabilities.Elicitation) > 0 && string(p.Capabilities.Elicitation) != "null"
	c.elicitation.Store(el)
	c.protocolVersion.Store(version)
	c.log.Info("mcp client initialized", "client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version,
		"protocol", version, "elicitation", el)
	result := map[string]any{
		"protocolVersion": version,
		"capabilities":    c.capabilities(false),
		"serverInfo":      c.cfg.ServerInfo,
	}
	if c.cfg.Instructions != "" {
		result["instructions"] = c.cfg.Instructions
	}
	c.out.reply(m.ID, result)
}

// forward hands a request the Conn does not answer to the Forwarder and
// writes its answer with the request's id.
func (c *Conn) forward(ctx context.Context, m *jsonrpcframe.Message, modern bool, e *inflight) {
	f, ok := c.cfg.Handler.(Forwarder)
	if !ok {
		c.forget(m.ID, e)
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": m.Method}, "method not found: %s", m.Method), modern)
		return
	}
	resp, err := f.Forward(ctx, m)
	c.forget(m.ID, e)
	if err != nil {
		c.replyErrorFor(m.ID, err, modern)
		return
	}
	out := *resp
	out.ID = m.ID
	if modern && len(out.Result) > 0 {
		out.Result = c.modernResult(out.Result)
	}
	if err := c.out.write(&out); err != nil {
		c.log.Debug("forwarded reply not delivered", "err", err)
	}
}
