package proxy

import (
	"context"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// newPlaces makes the places of isolated agents (worktrees, ports, the
// conflict radar) over the user's git: nil, with a warning, when git is
// missing or too old (an isolated start is then refused, saying so).
func (s *Server) newPlaces() *places.Places {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ports *workspace.Ports
	if s.opts.WorktreePorts > 0 {
		var err error
		dir, shared := s.opts.PortsDir, s.opts.PortsDir == ""
		if shared {
			dir = workspace.SharedPortsDir
		}
		if ports, err = workspace.NewPorts(workspace.PortsConfig{Dir: dir, Shared: shared}); err != nil {
			s.log.Warn("isolated agents get no ports", "dir", dir, "err", err)
		}
	}
	n := s.opts.WorktreePorts
	if ports == nil {
		n = 0
	}
	m, err := workspace.New(ctx, workspace.Config{Ports: ports, Logger: s.log})
	if err != nil {
		s.log.Warn("isolation \"worktree\" is not available", "err", err)
		return nil
	}
	return places.New(places.Config{Manager: m, Hosts: s.hosts.workspaces(), Team: s.opts.RegistryTeam, Setup: s.opts.WorktreeSetup, Ports: n,
		ATM: s.atm, MailTeam: s.opts.Team, Lead: s.opts.Identity, Audit: s.auditor, Logger: s.log})
}
