package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// ToolsOptions configure the tools-only server.
type ToolsOptions struct {
	// Home is the ATM home. optional: "" means atmclient.Home().
	Home string
	// Team and Identity fix who the tools act as. required.
	Team     string
	Identity string
	// Agent and AgentID are the kind and agent_id of the session whose
	// agent runs this server: the audit log names them with every call.
	// optional: "" means "codex" and no agent_id.
	Agent, AgentID string
	// AuditTeam names the registry whose audit log records the calls.
	// optional: "" means Team.
	AuditTeam string
	// Version is the server's version in serverInfo. optional: "" means "dev".
	Version string
	// TeamProblem says what is wrong with the team, "" when nothing is;
	// a "team not found" failure carries it (did you mean …). optional.
	TeamProblem func() string
	// Logger receives logs. optional: nil means discard.
	Logger *slog.Logger
}

// ServeTools runs the tools-only MCP server that each agent's thread
// starts, of every kind (FR-20.4, FR-20.5; an ACP agent that takes no
// stdio server, or one on a host, reaches it over HTTP through its
// backend): atm_send, atm_read, atm_broadcast and
// atm_pending_count, always acting as the identity on its command line, so
// an agent and its sub-agents can only speak as the thread's identity. It
// returns when r reaches EOF.
func ServeTools(ctx context.Context, opts ToolsOptions, r io.Reader, w io.Writer) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for kind, name := range map[string]string{"team": opts.Team, "identity": opts.Identity} {
		if err := atmclient.ValidateName(kind, name); err != nil {
			return fmt.Errorf("tools: %w", err)
		}
	}
	home := opts.Home
	if home == "" {
		h, err := atmclient.Home()
		if err != nil {
			return err
		}
		home = h
	}
	atm, err := atmclient.New(atmclient.Config{Home: home, Logger: log})
	if err != nil {
		return err
	}
	auditTeam := opts.AuditTeam
	if auditTeam == "" {
		auditTeam = opts.Team
	}
	dir, err := registry.TeamDir(home, auditTeam)
	if err != nil {
		return err
	}
	audit, err := dir.OpenAudit(registry.AuditConfig{})
	if err != nil {
		return err
	}
	defer audit.Close()
	kind := firstNonEmpty(opts.Agent, registry.DefaultKind)
	tools := &atmTools{
		atm:         atm,
		team:        opts.Team,
		teamProblem: opts.TeamProblem,
		// Who acts is fixed; atm_read's "from" is a filter of whose mail to
		// read, not an identity, and no other tool takes it.
		sender: func(a mcpconn.Args) (string, error) {
			for _, n := range []string{"identity", "agent_id"} {
				if v, _ := a.Str(n); v != "" && v != opts.Identity {
					return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": n},
						"this tool server acts only as %q; it cannot act as %q", opts.Identity, v)
				}
			}
			return opts.Identity, nil
		},
		audit: func(tool, identity, recipient, text string, err error) {
			outcome := "ok"
			if err != nil {
				outcome = "error: " + err.Error()
			}
			entry := registry.Entry{Event: tool + ":" + kind, AgentID: opts.AgentID, Identity: identity, Recipient: recipient, Summary: text, Outcome: outcome}
			if aerr := audit.Append(entry); aerr != nil {
				log.Warn("audit", "err", aerr)
			}
		},
	}
	list, err := toolsOnlyList(opts.Identity)
	if err != nil {
		return err
	}
	call := func(ctx context.Context, params *json.RawMessage, id jsonrpcframe.ID) (any, error) {
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if params == nil || json.Unmarshal(*params, &p) != nil {
			return nil, proxyerr.New(proxyerr.ErrInvalidParams, nil, "tools/call needs params {name, arguments}")
		}
		a, err := mcpconn.ParseArgs(p.Arguments)
		if err != nil {
			return nil, err
		}
		c := &mcpconn.ToolCall{ID: id, RawID: id.Raw(), Name: p.Name, Args: a}
		var res *mcpconn.ToolResult
		switch p.Name {
		case "atm_send":
			res, err = tools.send(ctx, c)
		case "atm_read":
			res, err = tools.read(ctx, c)
		case "atm_broadcast":
			res, err = tools.broadcast(ctx, c)
		case "atm_pending_count":
			res, err = tools.pending(ctx, c)
		default:
			err = proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"tool": p.Name}, "unknown tool %q", p.Name)
		}
		if err != nil {
			// Tool failures are results the model can read.
			return (&mcpconn.ToolResult{Text: err.Error(), IsError: true}).JSON(), nil
		}
		return res.JSON(), nil
	}
	handle := func(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if req.Params != nil {
				_ = json.Unmarshal(*req.Params, &p)
			}
			version := mcpconn.ProtocolVersions[0]
			for _, v := range mcpconn.ProtocolVersions {
				if v == p.ProtocolVersion {
					version = v
				}
			}
			return map[string]any{
				"protocolVersion": version,
				"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
				"serverInfo":      map[string]any{"name": "atm-agent-mcp-tools", "version": firstNonEmpty(opts.Version, "dev")},
				"instructions":    "Team mail for " + opts.Identity + " in team " + opts.Team + ".",
			}, nil
		case "ping":
			return struct{}{}, nil
		case "tools/list":
			return json.RawMessage(list), nil
		case "tools/call":
			id, _ := jsonrpcframe.ParseID([]byte(req.ID.String()))
			if req.ID.IsString {
				id = jsonrpcframe.StringID(req.ID.Str)
			}
			return call(ctx, req.Params, id)
		}
		return nil, proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": req.Method}, "method not found: %s", req.Method)
	}
	// The requests are answered by sourcegraph/jsonrpc2 over jsonrpcframe's
	// ObjectStream (either MCP framing); each call on a goroutine of its
	// own (AsyncHandler), so a slow inbox does not hold the others.
	stream := jsonrpcframe.NewObjectStream(r, w, nil, jsonrpcframe.FramingUnknown, nil)
	conn := jsonrpc2.NewConn(ctx, stream, jsonrpc2.AsyncHandler(wireErrors(handle)))
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		conn.Close()
	}
	if n := stream.Skipped(); n > 0 {
		log.Warn("tools server: unusable messages from the client were skipped", "count", n)
	}
	return nil
}

// wireErrors adapts a handler that returns the proxy's errors to
// jsonrpc2: each becomes the JSON-RPC error object proxyerr.ToWire makes
// (code, message and data), as the proxy itself answers.
func wireErrors(h func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error)) jsonrpc2.Handler {
	return jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		res, err := h(ctx, c, req)
		if err == nil {
			return res, nil
		}
		w := proxyerr.ToWire(err)
		data := json.RawMessage(w.Data)
		return nil, &jsonrpc2.Error{Code: w.Code, Message: w.Message, Data: &data}
	})
}

// toolsOnlyList is the tools/list of the tools-only server: the ATM tools
// without agent_id and identity, which the command line fixes.
func toolsOnlyList(identity string) ([]byte, error) {
	var all []map[string]any
	if err := json.Unmarshal(Definitions, &all); err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, t := range all {
		name, _ := t["name"].(string)
		if !strings.HasPrefix(name, "atm_") {
			continue
		}
		in, _ := t["inputSchema"].(map[string]any)
		if props, ok := in["properties"].(map[string]any); ok {
			delete(props, "agent_id")
			delete(props, "identity")
		}
		desc, _ := t["description"].(string)
		if i := strings.Index(desc, " The sender is"); i >= 0 {
			desc = desc[:i]
		}
		t["description"] = strings.TrimSpace(desc) + " You act as " + identity + "."
		t["annotations"] = map[string]any{"openWorldHint": false}
		delete(t, "_meta") // Claude Code's hints (alwaysLoad, result size) mean nothing to Codex
		out = append(out, t)
	}
	return json.Marshal(map[string]any{"tools": out})
}
