package hostrun

import (
	"context"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
)

// Runner runs workspace commands on the host Name over the connection
// that Conn returns.
type Runner struct {
	// Name names the host in errors.
	Name string
	// Conn returns the host's connection, nil while there is none yet
	// (serve makes it when it starts, and again after a failure).
	Conn func() *sshhost.Host
}

// Run implements workspace.Runner: the command's own exit status is a
// *workspace.ExitError; ssh's failure, the connection's, a missing
// directory are errors that it could not run, naming the host.
func (r Runner) Run(ctx context.Context, c *workspace.Command) error {
	conn := r.Conn()
	if conn == nil {
		return fmt.Errorf("host %s: not connected to it yet", r.Name)
	}
	err := conn.Exec(ctx, sshhost.Command{Path: c.Name, Args: c.Args, Env: c.Env, Dir: c.Dir}, c.Stdin, c.Stdout, c.Stderr)
	if code, ok := sshhost.ExitCode(err); ok {
		return &workspace.ExitError{Code: code}
	}
	return err
}

// Manager connects to the host and returns its workspace manager (its
// `git version` run there) with the connection, which the caller closes.
// ports is the host's ports directory's manager (nil: none reserved).
func Manager(ctx context.Context, conn *sshhost.Host, cfg workspace.Config) (*workspace.Manager, error) {
	if err := conn.Attempt(ctx); err != nil {
		return nil, err
	}
	cfg.Runner = Runner{Name: cfg.Host, Conn: func() *sshhost.Host { return conn }}
	return workspace.New(ctx, cfg)
}
