package acpbackend

import (
	"context"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Tool transports of Config.ToolTransport: how the thread's tool
// servers (ThreadParams.ToolServers) reach the agent.
const (
	// ToolsStdio gives each as a stdio MCP server that the agent starts
	// (every ACP agent must take those).
	ToolsStdio = "stdio"
	// ToolsHTTP serves each on a loopback HTTP endpoint of the backend
	// (MCP Streamable HTTP, answers as application/json; package
	// toolhttp), for agents that refuse stdio servers (GitHub Copilot
	// CLI) and for agents on a host (Config.Host), which reach it through
	// a reverse forward: the backend runs the server's command itself,
	// here, and passes requests through.
	ToolsHTTP = "http"
)

// httpServer is the ACP entry of ts served over HTTP: its URL (on the
// agent's loopback) and its bearer token as an Authorization header.
func (b *Backend) httpServer(ctx context.Context, ts backend.ToolServer) (acp.MCPServer, error) {
	e, err := b.toolHTTP.Endpoint(ctx, ts)
	if err != nil {
		return acp.MCPServer{}, err
	}
	return acp.MCPServer{Type: "http", Name: ts.Name, URL: e.URL,
		Headers: []acp.NameValue{{Name: "Authorization", Value: e.Header()}}}, nil
}
