package codexchild

import (
	"context"
	"maps"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Codex on a host (Config.Host) reaches the threads' tool servers, which
// run on this machine, by url: each is served over HTTP (package
// toolhttp) on a port of the host's loopback forwarded here, and becomes
// an mcp_servers entry
//
//	{url = "http://127.0.0.1:<port>/mcp", http_headers = {Authorization = "Bearer <token>"}}
//
// with its tools approved and the server required, as a stdio entry is.
// Measured with Codex 0.171.0 app-server (TestHostToolsReal and an earlier
// probe): Codex POSTs to the url with the header on every request (no
// event stream asked for), and bearer_token_env_var works as well, but it
// names a variable of Codex's own environment, which is fixed when the
// process starts, while a token is made per team member later, one
// app-server serving every thread of the host: http_headers is per
// thread.

// viaHTTP returns p with its tool servers as mcp_servers entries by url
// in its options' Config (a copy), and no ToolServers left; p itself
// without a Host or tool servers.
func (b *AppServer) viaHTTP(ctx context.Context, p backend.ThreadParams) (backend.ThreadParams, error) {
	if b.tools == nil || len(p.ToolServers) == 0 {
		return p, nil
	}
	o := optionsOf(p)
	o.Config = maps.Clone(o.Config)
	if o.Config == nil {
		o.Config = map[string]any{}
	}
	servers := map[string]any{}
	if existing, ok := o.Config["mcp_servers"].(map[string]any); ok {
		maps.Copy(servers, existing)
	}
	for _, ts := range p.ToolServers {
		e, err := b.tools.Endpoint(ctx, ts)
		if err != nil {
			return p, err
		}
		servers[ts.Name] = map[string]any{
			"url":                         e.URL,
			"http_headers":                map[string]any{"Authorization": e.Header()},
			"default_tools_approval_mode": "approve",
			"required":                    true,
		}
	}
	o.Config["mcp_servers"] = servers
	p.Options, p.ToolServers = o, nil
	return p, nil
}

// Close stops the child (see core's Close), then the tool servers it
// reached over HTTP (with a Host).
func (b *AppServer) Close(ctx context.Context) error {
	err := b.core.Close(ctx)
	if b.tools != nil {
		b.tools.Close(ctx)
	}
	return err
}
