package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/hostrun"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// The worktrees of a host: a workspace.Manager whose git, setup and check
// commands and file operations run there (workspace.Config.Host), over the
// host's master connection (sshhost.Exec), with ports reserved there. It
// is made when a place there is first needed (the connection must be up:
// `git version` runs there), then kept; a failure is tried again next
// time.

// hostWorkspaceTimeout bounds the making of a host's workspace (its `git
// version` there).
const hostWorkspaceTimeout = 30 * time.Second

// workspace returns the host's workspace manager, made at the first call
// that finds the host's connection up.
func (p *hostPlace) workspace(ctx context.Context) (*workspace.Manager, error) {
	p.wsMu.Lock()
	defer p.wsMu.Unlock()
	if p.ws != nil {
		return p.ws, nil
	}
	if err := p.ready(ctx); err != nil {
		return nil, err
	}
	r := hostrun.Runner{Name: p.name, Conn: p.conn}
	// The host's own ports directory: $ATM_PORTS_DIR there, else the
	// machine-wide one there.
	ports, err := workspace.NewPorts(workspace.PortsConfig{Runner: r})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, hostWorkspaceTimeout)
	defer cancel()
	m, err := workspace.New(ctx, workspace.Config{Runner: r, Host: p.name, Ports: ports, Logger: p.log})
	if err != nil {
		var ee *workspace.ExitError
		if errors.As(err, &ee) && ee.Code == 127 {
			return nil, fmt.Errorf("git is not installed on host %s: %w", p.name, err)
		}
		return nil, err
	}
	p.ws = m
	p.log.Info("worktrees on the host", "git", m.GitVersion())
	return m, nil
}
