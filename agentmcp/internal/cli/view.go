package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/view"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

type viewCmd struct {
	locateFlags `embed:""`
	Port        int  `placeholder:"N" help:"Serve the page on 127.0.0.1:N (default: a free port)."`
	Open        bool `help:"Open the page in the browser (xdg-open, or open on macOS)."`
	Detach      bool `help:"Run the page in the background: print its address and its pid, and return."`
}

// Help is shown by "atm-agent-mcp view --help".
func (viewCmd) Help() string {
	return `Serves a live page of every agent of the team, across every serve of the team on this machine (each Claude Code window runs one): what each agent does now and for how long, its tokens and cost, its unread mail and its pending approvals, which you can approve or deny there; the team's mail and each agent's turns over time.

The page is on 127.0.0.1 only, at the address printed, whose token every request needs. It runs until interrupted (Ctrl-C).`
}

func (c *viewCmd) Run(env *runEnv) error {
	if c.Detach {
		return c.detach(env)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	team, name, err := c.team(env)
	if err != nil {
		return err
	}
	srv, err := view.NewServer(view.ServerConfig{Team: team, TeamName: name, Port: c.Port})
	if err != nil {
		return err
	}
	go team.Run(ctx)
	fmt.Fprintf(env.stdout, "atm-agent-mcp view: team %s at %s\n", name, srv.URL())
	if c.Open {
		if err := openBrowser(srv.URL()); err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: cannot open a browser (%v): open the address above\n", err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// team is the Team of the configured team: the registry directory of its
// serves, and its name.
func (l locateFlags) team(env *runEnv) (*view.Team, string, error) {
	var f config.Flags
	l.apply(&f)
	cfg, err := env.load(f, false)
	if err != nil {
		return nil, "", err
	}
	env.warn(cfg)
	regTeam, _ := cfg.RegistryTeam()
	dir, err := registry.TeamDir(cfg.Home, regTeam)
	if err != nil {
		return nil, "", err
	}
	return view.NewTeam(view.TeamConfig{Dirs: []string{dir.Path()}, Team: cfg.Team, Registries: []registry.Dir{dir},
		Prices: Prices(cfg), Budget: int64(cfg.TeamBudgetTokens)}), cfg.Team, nil
}

// detach starts `view` again in a session of its own, with the same
// team, configuration and port, prints the address it printed and its
// pid, and returns (as /atm-agent-mcp:view needs: a slash command's
// shell waits for what it runs).
func (c *viewCmd) detach(env *runEnv) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("view --detach: %w", err)
	}
	args := []string{"view"}
	if c.Config != nil {
		args = append(args, "--config", *c.Config)
	}
	if c.Team != nil {
		args = append(args, "--team", *c.Team)
	}
	if c.Port != 0 {
		args = append(args, "--port", strconv.Itoa(c.Port))
	}
	cmd := exec.Command(exe, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("view --detach: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not ended with this shell
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("view --detach: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case l := <-line:
		if l == "" {
			err := cmd.Wait()
			return fmt.Errorf("view --detach: the page did not start: %v", err)
		}
		fmt.Fprintf(env.stdout, "%s (pid %d; stop it with: kill %d)\n", l, cmd.Process.Pid, cmd.Process.Pid)
		if c.Open {
			if _, url, ok := strings.Cut(l, " at "); ok {
				if err := openBrowser(url); err != nil {
					fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: cannot open a browser (%v): open the address above\n", err)
				}
			}
		}
		return cmd.Process.Release()
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return errors.New("view --detach: the page did not start within 10 s")
	}
}

func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

type statusCmd struct {
	locateFlags `embed:""`
	Watch       bool `help:"Redraw the table every second until interrupted."`
	JSON        bool `name:"json" help:"Print the team's state as JSON (agents, serves, mail) instead of a table."`
}

// Help is shown by "atm-agent-mcp status --help".
func (statusCmd) Help() string {
	return `Prints every agent of the team, across every serve of the team on this machine, as the page of "atm-agent-mcp view" shows them: state and for how long, what it does now, turns, tokens, cost, budget, unread mail, pending approvals, branch and (for an agent in a worktree of its own) its change. The states come from the running serves themselves; an agent of a serve that has exited is shown gone. The first line adds up the team's tokens and cost, its closed sessions included, and its budget.`
}

func (c *statusCmd) Run(env *runEnv) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	team, _, err := c.team(env)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { team.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-team.Ready():
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return nil
	}
	team.Refresh() // the registry's closed sessions and the team's budget
	if c.JSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(team.Snapshot())
	}
	if !c.Watch {
		return view.WriteTable(env.stdout, team.Snapshot(), time.Now())
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		fmt.Fprint(env.stdout, "\x1b[H\x1b[2J")
		if err := view.WriteTable(env.stdout, team.Snapshot(), time.Now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
