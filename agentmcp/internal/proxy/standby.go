package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
)

// StandbyConfig configures RunStandby.
type StandbyConfig struct {
	// Why is the reason this serve stands by, said in full: the server's
	// instructions, and the text of every tool call's error result.
	// required.
	Why string
	// Tools are the tools listed (tools.Definitions, so that the model
	// calls them and reads Why), or nil for none: a serve that has nothing
	// to offer and nothing to tell the model beyond its instructions.
	Tools json.RawMessage
	// Version is the server's version in its serverInfo. optional.
	Version string
	// Logger receives the connection's logs. optional: nil discards.
	Logger *slog.Logger
}

// RunStandby serves an MCP connection that claims nothing, starts nothing
// and holds no identity: it answers the handshake (so that the client's
// connection succeeds, and Claude Code caches no failure of it in
// ~/.claude/mcp-needs-auth-cache.json, which would keep the next session
// from starting the real server for 15 minutes), lists cfg.Tools, and
// answers every tool call with an error result that says cfg.Why. It
// returns when the client's stream ends (nil) or ctx does.
//
// serve stands by when it runs inside one of serve's own agents (a Claude
// agent's Claude Code loads the user's plugins, ours included) and, under
// Claude Code, when its explicitly configured identity is held by another
// serve: there the user reads the clash and its fix in the conversation,
// where a failed connection would show only "CONNECTION_CLOSED".
func RunStandby(ctx context.Context, cfg StandbyConfig, r io.Reader, w io.Writer) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn := mcpconn.New(mcpconn.Config{
		Handler:      standbyHandler{why: cfg.Why},
		ServerInfo:   mcpconn.ServerInfo{Name: "atm-agent-mcp", Title: "ATM agent proxy for Codex (standing by)", Version: cfg.Version},
		Instructions: cfg.Why,
		Tools:        cfg.Tools,
		Logger:       log,
	})
	err := conn.Serve(ctx, r, w)
	conn.CancelAll()
	conn.Wait(time.Second)
	conn.Close()
	return err
}

// standbyHandler answers every tool call with why, as an error result the
// model reads.
type standbyHandler struct{ why string }

func (h standbyHandler) CallTool(context.Context, *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	return &mcpconn.ToolResult{Text: h.why, IsError: true}, nil
}
