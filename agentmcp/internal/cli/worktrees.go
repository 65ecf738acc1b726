package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

type worktreesCmd struct {
	locateFlags `embed:""`
	JSON        bool `name:"json" help:"Print JSON instead of a table."`
	Prune       bool `help:"Remove the worktrees (with their branches) that hold no work and that nobody owns; say what is kept and why."`
}

// Help is shown by "atm-agent-mcp worktrees --help".
func (worktreesCmd) Help() string {
	return `Lists the git worktrees that serve made for the team's isolated agents (isolation "worktree"): in the repositories the team's sessions were isolated in and in the repository of the working directory, each with its agent, branch, path, state and whether it holds work. STATE is live (a running serve holds it), kept (its agent was closed, or its serve stopped: a resume re-enters it) or orphaned (its serve was killed: resumable, nobody's until then). DIRTY counts uncommitted paths, AHEAD the commits its base lacks. Nothing is changed, and git's own locks are read, not taken.

--prune removes, in those repositories, the worktrees that hold no work (no commit, nothing uncommitted, nothing untracked) and that no live serve holds, with their branches; it keeps every other one and says why (live, dirty, commits ahead). A worktree that serve did not make is never touched.`
}

// worktreeRow is one listed worktree, with its session as the registry
// has it.
type worktreeRow struct {
	workspace.Worktree
	Identity string `json:"identity,omitempty"`
	Session  string `json:"session_status,omitempty"`
}

// pruneOut is --prune's JSON.
type pruneOut struct {
	Removed []workspace.Worktree     `json:"removed"`
	Kept    []workspace.KeptWorktree `json:"kept"`
}

func (c *worktreesCmd) Run(env *runEnv) error {
	var f config.Flags
	c.locateFlags.apply(&f)
	cfg, err := env.load(f, false)
	if err != nil {
		return err
	}
	env.warn(cfg)
	regTeam, _ := cfg.RegistryTeam()
	dir, err := registry.TeamDir(cfg.Home, regTeam)
	if err != nil {
		return err
	}
	sessions, err := scan(env, dir, registry.Filter{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := workspace.New(ctx, workspace.Config{})
	if err != nil {
		return err
	}
	repos := repositories(ctx, sessions)
	byAgent := map[string]sessionRow{}
	for _, s := range sessions {
		byAgent[s.AgentID] = s
	}
	if c.Prune {
		return c.prune(ctx, env, m, repos)
	}
	rows := []worktreeRow{}
	for _, repo := range repos {
		list, err := m.List(ctx, repo)
		if err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: %s: %v\n", repo, err)
			continue
		}
		for _, w := range list {
			if w.Team != "" && w.Team != regTeam {
				continue
			}
			r := worktreeRow{Worktree: w}
			if s, ok := byAgent[w.AgentID]; ok {
				r.Identity, r.Session = s.Identity, string(s.Status)
			}
			rows = append(rows, r)
		}
	}
	if c.JSON {
		return writeJSON(env.stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(env.stdout, "No worktrees of team %q's agents (in %s).\n", regTeam, strings.Join(repos, ", "))
		return nil
	}
	return writeWorktrees(env.stdout, rows)
}

// prune prunes each repository and says what it removed and kept.
func (c *worktreesCmd) prune(ctx context.Context, env *runEnv, m *workspace.Manager, repos []string) error {
	out := pruneOut{Removed: []workspace.Worktree{}, Kept: []workspace.KeptWorktree{}}
	for _, repo := range repos {
		rep, err := m.Prune(ctx, repo)
		if err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: %s: %v\n", repo, err)
		}
		out.Removed = append(out.Removed, rep.Removed...)
		out.Kept = append(out.Kept, rep.Kept...)
	}
	if c.JSON {
		return writeJSON(env.stdout, out)
	}
	fmt.Fprintf(env.stdout, "Removed %d worktree(s) that held no work and that nobody owned:\n", len(out.Removed))
	for _, w := range out.Removed {
		fmt.Fprintf(env.stdout, "  %s  %s  %s\n", w.AgentID, w.Branch, w.Path)
	}
	fmt.Fprintf(env.stdout, "Kept %d:\n", len(out.Kept))
	for _, k := range out.Kept {
		fmt.Fprintf(env.stdout, "  %s  %s  %s  (%s)\n", k.AgentID, k.Branch, k.Path, k.Reason)
	}
	return nil
}

// repositories are the checkouts to look in: where the team's isolated
// sessions were made from, and the working directory's own, once each.
func repositories(ctx context.Context, sessions []sessionRow) []string {
	var repos []string
	add := func(dir string) {
		if dir == "" {
			return
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if !slices.Contains(repos, dir) {
			repos = append(repos, dir)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		cmd := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel")
		cmd.Dir = wd
		if out, err := cmd.Output(); err == nil {
			add(strings.TrimSpace(string(out)))
		}
	}
	for _, s := range sessions {
		if s.Worktree != nil {
			add(s.Worktree.Source)
		}
	}
	return repos
}

// writeWorktrees prints the worktrees as a table.
func writeWorktrees(w io.Writer, rows []worktreeRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT_ID\tIDENTITY\tSTATE\tDIRTY\tAHEAD\tBRANCH\tPATH")
	for _, r := range rows {
		id := r.Identity
		if id == "" {
			id = r.Worktree.Identity
		}
		state := string(r.State)
		if r.Missing {
			state += " (directory missing)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.AgentID, id, state, r.Dirty, r.Ahead, r.Branch, r.Path)
	}
	return tw.Flush()
}
