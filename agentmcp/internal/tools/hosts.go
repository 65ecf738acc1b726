package tools

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// HostStatus is a host in agent_status: its connection and its live
// sessions.
type HostStatus struct {
	// Up: serve's ssh connection to the host is up.
	Up bool `json:"up"`
	// Error says why not, with what ssh said. "" while it is up.
	Error string `json:"error,omitempty"`
	// Sessions are the live sessions there.
	Sessions int `json:"sessions"`
}

// localHost is the host argument's name for this machine.
const localHost = "local"

// hostArg is the host a new session of kind runs on: the call's host
// ("local" is this machine), else the configured one (Config.HostFor:
// the role's, the kind's, the plugin's); "" for this machine. Whether the
// host is configured, and takes the kind, is the session manager's check
// (an unknown one is INVALID_PARAMS naming the hosts there are).
func (e *Env) hostArg(a mcpconn.Args, kind string) (string, error) {
	host, err := a.Str("host")
	if err != nil {
		return "", err
	}
	if host == "" && e.cfg.HostFor != nil {
		role, err := a.Str("role")
		if err != nil {
			return "", err
		}
		host = e.cfg.HostFor(kind, role)
	}
	if host == localHost {
		host = ""
	}
	return host, nil
}

// sameHost checks that a resume's host (when the call gives one) is the
// session's own: an agent's thread lives where it ran.
func (e *Env) sameHost(c *mcpconn.ToolCall, s *session.Session) error {
	if !c.Args.Has("host") {
		return nil
	}
	asked, err := c.Args.Str("host")
	if err != nil {
		return err
	}
	if asked == localHost {
		asked = ""
	}
	rec := s.Record()
	if asked == rec.Host {
		return nil
	}
	where := func(h string) string {
		if h == "" {
			return "this machine"
		}
		return "host " + h
	}
	return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "host", "host": asked, "session_host": rec.Host},
		"session %s (%s) runs on %s, not %s: its thread lives there; resume it without host, or start a new session", rec.AgentID, rec.Identity, where(rec.Host), where(asked))
}
