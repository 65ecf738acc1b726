package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/hostrun"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

type worktreesCmd struct {
	locateFlags `embed:""`
	JSON        bool `name:"json" help:"Print JSON instead of a table."`
	Prune       bool `help:"Remove the worktrees (with their branches) that hold no work and that nobody owns; say what is kept and why."`
}

// Help is shown by "atm-agent-mcp worktrees --help".
func (worktreesCmd) Help() string {
	return `Lists the git worktrees that serve made for the team's isolated agents (isolation "worktree"): in the repositories the team's sessions were isolated in (on this machine, and over ssh on the hosts of configuration where agents ran) and in the repository of the working directory, each with its agent, host, branch, path, state and whether it holds work. STATE is live (a running serve holds it), kept (its agent was closed, or its serve stopped: a resume re-enters it) or orphaned (its serve was killed: resumable, nobody's until then). DIRTY counts uncommitted paths, AHEAD the commits its base lacks. Nothing is changed, and git's own locks are read, not taken.

--prune removes, in those repositories, the worktrees that hold no work (no commit, nothing uncommitted, nothing untracked) and that no live serve holds, with their branches; it keeps every other one and says why (live, dirty, commits ahead). A worktree that serve did not make is never touched.`
}

// worktreeRow is one listed worktree, with its session as the registry
// has it.
type worktreeRow struct {
	workspace.Worktree
	// Host is the host of configuration the worktree is on ("" for this
	// machine).
	Host     string `json:"host,omitempty"`
	Identity string `json:"identity,omitempty"`
	Session  string `json:"session_status,omitempty"`
}

// place is a checkout to look in: a repository on this machine or on a
// host, and the manager of that machine's worktrees.
type place struct {
	host string
	repo string
	m    *workspace.Manager
}

// pruneOut is --prune's JSON.
type pruneOut struct {
	Removed []hostWorktree `json:"removed"`
	Kept    []hostKept     `json:"kept"`
}

// hostWorktree and hostKept are prune's results with their host ("" for
// this machine).
type hostWorktree struct {
	workspace.Worktree
	Host string `json:"host,omitempty"`
}

type hostKept struct {
	workspace.KeptWorktree
	Host string `json:"host,omitempty"`
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
	places := []place{}
	for _, repo := range repositories(ctx, sessions) {
		places = append(places, place{repo: repo, m: m})
	}
	hosts, closeHosts := hostPlaces(ctx, env, cfg, sessions)
	defer closeHosts()
	places = append(places, hosts...)
	byAgent := map[string]sessionRow{}
	for _, s := range sessions {
		byAgent[s.AgentID] = s
	}
	if c.Prune {
		return c.prune(ctx, env, places)
	}
	rows := []worktreeRow{}
	var where []string
	for _, pl := range places {
		where = append(where, pl.name())
		list, err := pl.m.List(ctx, pl.repo)
		if err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: %s: %v\n", pl.name(), err)
			continue
		}
		for _, w := range list {
			if w.Team != "" && w.Team != regTeam {
				continue
			}
			r := worktreeRow{Worktree: w, Host: pl.host}
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
		fmt.Fprintf(env.stdout, "No worktrees of team %q's agents (in %s).\n", regTeam, strings.Join(where, ", "))
		return nil
	}
	return writeWorktrees(env.stdout, rows)
}

// name is the place in messages: the repository, with its host.
func (p place) name() string {
	if p.host == "" {
		return p.repo
	}
	return p.host + ":" + p.repo
}

// hostConnect bounds the connection to each host.
const hostConnect = 15 * time.Second

// hostPlaces connects to each host of configuration on which the team's
// sessions made worktrees, and returns those repositories there; a host
// that is not configured any more, or not reachable, is a warning. The
// returned func closes the connections.
func hostPlaces(ctx context.Context, env *runEnv, cfg *config.Config, sessions []sessionRow) ([]place, func()) {
	repos := map[string][]string{}
	for _, s := range sessions {
		if s.Host != "" && s.Worktree != nil && s.Worktree.Source != "" && !slices.Contains(repos[s.Host], s.Worktree.Source) {
			repos[s.Host] = append(repos[s.Host], s.Worktree.Source)
		}
	}
	var out []place
	var conns []*sshhost.Host
	for _, name := range slices.Sorted(maps.Keys(repos)) {
		hc, ok := cfg.Hosts[name]
		if !ok {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: host %s: not in the configuration any more; its worktrees (%s) are not listed\n", name, strings.Join(repos[name], ", "))
			continue
		}
		conn, err := sshhost.New(sshhost.Config{Name: hc.Name, Dest: hc.SSH, SSHArgs: hc.SSHArgs,
			ConnectTimeout: hostConnect, MinBackoff: hostConnect, MaxBackoff: hostConnect})
		if err == nil {
			conns = append(conns, conn)
			var m *workspace.Manager
			cctx, cancel := context.WithTimeout(ctx, 2*hostConnect)
			m, err = hostrun.Manager(cctx, conn, workspace.Config{Host: name})
			cancel()
			if err == nil {
				for _, repo := range repos[name] {
					out = append(out, place{host: name, repo: repo, m: m})
				}
				continue
			}
		}
		fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: host %s: %v; its worktrees (%s) are not listed\n", name, err, strings.Join(repos[name], ", "))
	}
	return out, func() {
		for _, c := range conns {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.Close(cctx)
			cancel()
		}
	}
}

// prune prunes each repository and says what it removed and kept.
func (c *worktreesCmd) prune(ctx context.Context, env *runEnv, places []place) error {
	out := pruneOut{Removed: []hostWorktree{}, Kept: []hostKept{}}
	for _, pl := range places {
		rep, err := pl.m.Prune(ctx, pl.repo)
		if err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: %s: %v\n", pl.name(), err)
		}
		for _, w := range rep.Removed {
			out.Removed = append(out.Removed, hostWorktree{w, pl.host})
		}
		for _, k := range rep.Kept {
			out.Kept = append(out.Kept, hostKept{k, pl.host})
		}
	}
	if c.JSON {
		return writeJSON(env.stdout, out)
	}
	on := func(host string) string {
		if host == "" {
			return ""
		}
		return "  (on " + host + ")"
	}
	fmt.Fprintf(env.stdout, "Removed %d worktree(s) that held no work and that nobody owned:\n", len(out.Removed))
	for _, w := range out.Removed {
		fmt.Fprintf(env.stdout, "  %s  %s  %s%s\n", w.AgentID, w.Branch, w.Path, on(w.Host))
	}
	fmt.Fprintf(env.stdout, "Kept %d:\n", len(out.Kept))
	for _, k := range out.Kept {
		fmt.Fprintf(env.stdout, "  %s  %s  %s  (%s)%s\n", k.AgentID, k.Branch, k.Path, k.Reason, on(k.Host))
	}
	return nil
}

// repositories are the checkouts on this machine to look in: where the
// team's isolated sessions here were made from, and the working
// directory's own, once each.
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
		if s.Worktree != nil && s.Host == "" { // a host's: hostPlaces
			add(s.Worktree.Source)
		}
	}
	return repos
}

// writeWorktrees prints the worktrees as a table.
func writeWorktrees(w io.Writer, rows []worktreeRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	hosts := slices.ContainsFunc(rows, func(r worktreeRow) bool { return r.Host != "" })
	if hosts {
		fmt.Fprintln(tw, "AGENT_ID\tIDENTITY\tHOST\tSTATE\tDIRTY\tAHEAD\tBRANCH\tPATH")
	} else {
		fmt.Fprintln(tw, "AGENT_ID\tIDENTITY\tSTATE\tDIRTY\tAHEAD\tBRANCH\tPATH")
	}
	for _, r := range rows {
		id := r.Identity
		if id == "" {
			id = r.Worktree.Identity
		}
		state := string(r.State)
		if r.Missing {
			state += " (directory missing)"
		}
		host := ""
		if hosts {
			host = cmp.Or(r.Host, "local") + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s%s\t%d\t%d\t%s\t%s\n", r.AgentID, id, host, state, r.Dirty, r.Ahead, r.Branch, r.Path)
	}
	return tw.Flush()
}
