package mcpconn

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// ModernVersions are the stateless MCP revisions a Conn speaks: no
// initialize, every request declares its version, client and capabilities
// in its _meta, server/discover describes the server, every result says
// its resultType, and the server asks the client through multi round-trip
// results instead of requests of its own.
var ModernVersions = []string{"2026-07-28"}

// The values of Config.Protocol.
const (
	// ProtocolAuto speaks the revision each request uses: the modern one to
	// requests that declare it, the legacy ones after initialize.
	ProtocolAuto = "auto"
	// ProtocolLegacy speaks only the initialize-based revisions (up to
	// 2025-11-25): server/discover is an unknown method, so that a client
	// that probes it falls back to initialize, and _meta is not read.
	ProtocolLegacy = "2025-11-25"
)

// The _meta keys of the modern revision.
const (
	metaVersion      = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo   = "io.modelcontextprotocol/clientInfo"
	metaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo   = "io.modelcontextprotocol/serverInfo"
)

// reqMeta is what a request's _meta says of the client, in the modern
// revision.
type reqMeta struct {
	modern      bool   // the request declares a modern revision
	version     string // the revision it declares
	elicitation bool   // its client capabilities include form elicitation
	tasks       bool   // its client capabilities list the tasks extension (tasks.go)
	client      string // its clientInfo's name, for the log
}

// requestMeta reads the modern revision's fields from a request's _meta
// (members are its params'). A request without a modern protocolVersion is
// a legacy one; a modern one whose version is not spoken gets the
// specification's UnsupportedProtocolVersion error, one without client
// capabilities INVALID_PARAMS.
func (c *Conn) requestMeta(params []jsonrpcframe.Member) (reqMeta, error) {
	if c.cfg.Protocol == ProtocolLegacy {
		return reqMeta{}, nil
	}
	meta := jsonrpcframe.Lookup(params, "_meta")
	if len(meta) == 0 {
		return reqMeta{}, nil
	}
	var buf [8]jsonrpcframe.Member
	mm, ok := jsonrpcframe.AppendMembers(buf[:0], meta)
	if !ok {
		return reqMeta{}, nil
	}
	version, ok := jsonrpcframe.String(jsonrpcframe.Lookup(mm, metaVersion))
	if !ok || version < ModernVersions[len(ModernVersions)-1] && slices.Contains(ProtocolVersions, version) {
		return reqMeta{}, nil // a legacy revision named, or none
	}
	if !slices.Contains(ModernVersions, version) {
		return reqMeta{}, proxyerr.New(proxyerr.ErrUnsupportedProtocolVersion,
			map[string]any{"supported": supportedVersions(), "requested": version},
			"Unsupported protocol version %q (this server speaks %v)", version, supportedVersions())
	}
	r := reqMeta{modern: true, version: version}
	caps := jsonrpcframe.Lookup(mm, metaCapabilities)
	var cbuf [8]jsonrpcframe.Member
	cm, ok := jsonrpcframe.AppendMembers(cbuf[:0], caps)
	if !ok {
		return reqMeta{}, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"_meta": metaCapabilities},
			"the request's _meta has no %q object (required in MCP %s)", metaCapabilities, version)
	}
	r.elicitation = formElicitation(jsonrpcframe.Lookup(cm, "elicitation"))
	var ebuf [4]jsonrpcframe.Member
	if ext, ok := jsonrpcframe.AppendMembers(ebuf[:0], jsonrpcframe.Lookup(cm, "extensions")); ok {
		r.tasks = len(jsonrpcframe.Lookup(ext, TasksExtension)) > 0
	}
	if info := jsonrpcframe.Lookup(mm, metaClientInfo); len(info) > 0 {
		var ibuf [8]jsonrpcframe.Member
		im, _ := jsonrpcframe.AppendMembers(ibuf[:0], info)
		r.client, _ = jsonrpcframe.String(jsonrpcframe.Lookup(im, "name"))
	}
	return r, nil
}

// formElicitation reports whether an elicitation capability includes form
// mode: an empty object (form, as before modes existed) or one with form.
func formElicitation(raw json.RawMessage) bool {
	var buf [4]jsonrpcframe.Member
	m, ok := jsonrpcframe.AppendMembers(buf[:0], raw)
	if !ok {
		return false
	}
	return len(m) == 0 || len(jsonrpcframe.Lookup(m, "form")) > 0
}

// supportedVersions lists every revision a Conn speaks, newest first.
func supportedVersions() []string {
	return append(slices.Clone(ModernVersions), ProtocolVersions...)
}

// modernMethodGone reports the methods the modern revision removed: the
// handshake, ping, logging's level and resource subscriptions.
func modernMethodGone(method string) bool {
	switch method {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// modernTail is what a modern result carries after its own members: the
// resultType and the server's identity in _meta (",…" without the closing
// brace).
func (c *Conn) modernTail(resultType string) []byte {
	b := []byte(`,"resultType":`)
	b = jsonrpcframe.AppendString(b, resultType)
	b = append(b, `,"_meta":{`...)
	b = jsonrpcframe.AppendString(b, metaServerInfo)
	b = append(b, ':')
	info, _ := json.Marshal(c.cfg.ServerInfo)
	b = append(b, info...)
	return append(b, '}')
}

// modernResult adds the modern members to a result object.
func (c *Conn) modernResult(result json.RawMessage) json.RawMessage {
	result = bytes.TrimSpace(result)
	if len(result) < 2 || result[len(result)-1] != '}' {
		return result
	}
	tail := c.completeTail
	body := result[:len(result)-1]
	if len(bytes.TrimSpace(body[1:])) == 0 {
		tail = tail[1:] // {} has no member to follow
	}
	out := make([]byte, 0, len(result)+len(tail))
	out = append(out, body...)
	out = append(out, tail...)
	return append(out, '}')
}

// replyModern sends a result to a modern request, with its resultType and
// the server's identity.
func (c *Conn) replyModern(id jsonrpcframe.ID, result any) {
	raw, err := json.Marshal(result)
	if err != nil {
		c.out.replyError(id, proxyerr.New(proxyerr.ErrInternal, nil, "encode result: %v", err))
		return
	}
	c.out.reply(id, c.modernResult(raw))
}

// replyErrorFor sends an error to a request of either revision: the modern
// one may not carry -32002 (resource not found before 2026-07-28), so a
// SESSION_NOT_FOUND goes as INVALID_PARAMS with its error_code kept in data.
func (c *Conn) replyErrorFor(id jsonrpcframe.ID, err error, modern bool) {
	if !modern {
		c.out.replyError(id, err)
		return
	}
	w := proxyerr.ToWire(err)
	if w.Code == proxyerr.CodeSessionNotFound {
		w.Code = jsonrpcframe.CodeInvalidParams
	}
	if werr := c.out.write(jsonrpcframe.NewErrorResponse(id, w)); werr != nil {
		c.log.Debug("error reply not delivered", "id", id.String(), "err", werr)
	}
}

// discover answers server/discover: the revisions, the capabilities, the
// instructions and the server's identity.
func (c *Conn) discover(m *jsonrpcframe.Message) {
	result := map[string]any{
		"supportedVersions": supportedVersions(),
		"capabilities":      c.capabilities(true),
		"ttlMs":             0,
		"cacheScope":        "public",
	}
	if c.cfg.Instructions != "" {
		result["instructions"] = c.cfg.Instructions
	}
	c.replyModern(m.ID, result)
}

// capabilities are the server's capabilities: tools and logging, resources
// with a ResourceHandler (listChanged, not subscribe), and, in the
// modern revision's server/discover, the tasks extension with a
// TaskHandler.
func (c *Conn) capabilities(modern bool) map[string]any {
	caps := map[string]any{"tools": map[string]any{"listChanged": false}, "logging": map[string]any{}}
	if _, ok := c.cfg.Handler.(ResourceHandler); ok {
		caps["resources"] = map[string]any{"listChanged": true} // listchanged.go
	}
	if _, ok := c.cfg.Handler.(TaskHandler); ok && modern {
		caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	}
	return caps
}
