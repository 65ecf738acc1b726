package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// statuses are the registry statuses --status accepts.
var statuses = []registry.Status{
	registry.StatusActive, registry.StatusBusy, registry.StatusIdle,
	registry.StatusClosed, registry.StatusStale, registry.StatusInterrupted,
}

type sessionsCmd struct {
	locateFlags `embed:""`
	Repo        string        `placeholder:"NAME" help:"Only sessions of this repository (its name or root path)."`
	Identity    string        `placeholder:"NAME" help:"Only sessions bound to this identity."`
	Status      string        `placeholder:"STATUS" help:"Only sessions with this status: active, busy, idle, closed, stale or interrupted."`
	JSON        bool          `name:"json" help:"Print a JSON array instead of a table."`
	Prune       optionalValue `placeholder:"AGE" help:"Remove closed, stale and interrupted sessions, and their summaries, inactive for more than AGE: --prune alone is 7 days, --prune=24h or --prune=30d choose."`
}

// Help is shown by "atm-agent-mcp sessions --help".
func (sessionsCmd) Help() string {
	return `Reads the registry of every proxy instance of the team under ~/.config/atm/agent-sessions/<team>/ (or $ATM_HOME/...) without locking or changing anything. The sessions of Claude Code session teams (session-<id8>) are all kept under the fixed name claude-code: list them with --team claude-code. Sessions are listed most recently active first; SUMMARY says whether a summary is saved for "atm-agent-mcp summary" and "serve --resume"; SERVE is the pid of the serve that runs the session's instance, "-" when none does. A session whose serve was killed or crashed reads stale at once (the serve's pid, from its identity claim, is gone).

--prune skips instances whose proxy is running.`
}

// sessionRow is one listed session.
type sessionRow struct {
	registry.Session
	Instance   string
	HasSummary bool
	// ServePID is the pid of the serve that runs the session's instance,
	// 0 when none does (it ended, or was killed: its live sessions then
	// read stale).
	ServePID int
}

// MarshalJSON writes the registry fields plus instance, has_summary and
// serve_pid (null when no serve runs the instance).
func (r sessionRow) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Session)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["instance"], _ = json.Marshal(r.Instance)
	m["has_summary"], _ = json.Marshal(r.HasSummary)
	m["serve_pid"] = json.RawMessage("null")
	if r.ServePID != 0 {
		m["serve_pid"], _ = json.Marshal(r.ServePID)
	}
	return json.Marshal(m)
}

func (c *sessionsCmd) Run(env *runEnv) error {
	filter := registry.Filter{Repo: c.Repo, Identity: c.Identity, Status: registry.Status(c.Status)}
	if c.Status != "" && !slices.Contains(statuses, filter.Status) {
		return usageError{fmt.Errorf("--status %q: expected one of active, busy, idle, closed, stale, interrupted", c.Status)}
	}
	var age time.Duration
	if c.Prune.Set {
		if c.Repo != "" || c.Identity != "" || c.Status != "" {
			return usageError{errors.New("--prune works on whole registries and cannot be combined with --repo, --identity or --status")}
		}
		age = defaultPruneAge
		if c.Prune.Value != "" {
			a, err := parseAge(c.Prune.Value)
			if err != nil {
				return usageError{err}
			}
			age = a
		}
	}
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
	if c.Prune.Set {
		return c.prune(env, cfg, dir, age)
	}
	rows, err := scan(env, dir, filter)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(env.stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(env.stdout, "No sessions in team %q%s.\n", regTeam, describeFilter(filter))
		if hint := otherTeamsHint(cfg.Home, regTeam); hint != "" {
			fmt.Fprintln(env.stdout, hint)
		}
		return nil
	}
	return writeTable(env.stdout, rows)
}

// scan lists the sessions of every instance registry of the team that pass
// filter, most recently active first. The live sessions of an instance
// whose serve no longer runs read stale (registry.Dir.Scan). A session
// found in two registries (a take-over cut short between its two writes)
// is listed once: where a serve runs it, else where it was active last.
// Unreadable registries are reported on stderr and skipped.
func scan(env *runEnv, dir registry.Dir, filter registry.Filter) ([]sessionRow, error) {
	insts, err := dir.Scan()
	if err != nil {
		return nil, err
	}
	rows := []sessionRow{}
	at := map[string]int{} // agent_id: index in rows
	for _, inst := range insts {
		if inst.Err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: skipping the registry of instance %s: %v\n", inst.Identity, inst.Err)
			continue
		}
		pid := 0
		if inst.Running {
			pid = inst.Owner.PID
		}
		for _, s := range inst.Sessions {
			if !filter.Match(s) {
				continue
			}
			has := s.BackendID != "" && dir.HasSummary(s.Identity, s.BackendID)
			row := sessionRow{Session: s, Instance: inst.Identity, HasSummary: has, ServePID: pid}
			if i, ok := at[s.AgentID]; ok {
				if prefer(row, rows[i]) {
					rows[i] = row
				}
				continue
			}
			at[s.AgentID] = len(rows)
			rows = append(rows, row)
		}
	}
	slices.SortStableFunc(rows, func(a, b sessionRow) int {
		if c := b.LastActive.Compare(a.LastActive); c != 0 {
			return c
		}
		return strings.Compare(a.AgentID, b.AgentID)
	})
	return rows, nil
}

// prefer reports whether a is the better of two rows of one session: the
// one a running serve holds, else the one active last.
func prefer(a, b sessionRow) bool {
	if (a.ServePID != 0) != (b.ServePID != 0) {
		return a.ServePID != 0
	}
	return a.LastActive.After(b.LastActive)
}

// writeTable prints rows as an aligned table.
func writeTable(w io.Writer, rows []sessionRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT_ID\tIDENTITY\tSTATUS\tSTATE\tREPO\tBRANCH\tLAST_ACTIVE\tSUMMARY\tINSTANCE\tSERVE")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, r := range rows {
		summary := "no"
		if r.HasSummary {
			summary = "yes"
		}
		serve := "-"
		if r.ServePID != 0 {
			serve = fmt.Sprintf("pid %d", r.ServePID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.AgentID, r.Identity, r.Status, dash(string(r.ThreadState)), dash(r.RepoName), dash(r.Branch),
			r.LastActive.UTC().Format(time.RFC3339), summary, r.Instance, serve)
	}
	return tw.Flush()
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// describeFilter renders a filter for the "no sessions" message.
func describeFilter(f registry.Filter) string {
	var parts []string
	if f.Repo != "" {
		parts = append(parts, "repo "+f.Repo)
	}
	if f.Identity != "" {
		parts = append(parts, "identity "+f.Identity)
	}
	if f.Status != "" {
		parts = append(parts, "status "+string(f.Status))
	}
	if len(parts) == 0 {
		return ""
	}
	return " matching " + strings.Join(parts, ", ")
}

// prune prunes every instance registry that no running proxy holds.
func (c *sessionsCmd) prune(env *runEnv, cfg *config.Config, dir registry.Dir, age time.Duration) error {
	insts, err := dir.Scan()
	if err != nil {
		return err
	}
	pruned := []sessionRow{}
	var errs []error
	for _, inst := range insts {
		if inst.Err != nil {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: warning: skipping the registry of instance %s: %v\n", inst.Identity, inst.Err)
			continue
		}
		reg, err := registry.Open(registry.Config{Home: cfg.Home, Team: dir.Team(), Identity: inst.Identity})
		var conflict *registry.ConflictError
		if errors.As(err, &conflict) {
			fmt.Fprintf(env.stderr, "atm-agent-mcp: skipping instance %s: its proxy is running\n", inst.Identity)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dropped, err := reg.Prune(age)
		if err != nil {
			errs = append(errs, err)
		}
		if err := reg.Close(); err != nil {
			errs = append(errs, err)
		}
		for _, s := range dropped {
			pruned = append(pruned, sessionRow{Session: s, Instance: inst.Identity})
		}
	}
	if c.JSON {
		if err := writeJSON(env.stdout, pruned); err != nil {
			return err
		}
	} else if len(pruned) == 0 {
		fmt.Fprintf(env.stdout, "Nothing to prune in team %q (no closed, stale or interrupted session inactive for %s).\n", dir.Team(), showAge(age))
	} else {
		fmt.Fprintf(env.stdout, "Pruned %d session(s) inactive for %s, with their summaries:\n", len(pruned), showAge(age))
		if err := writeTable(env.stdout, pruned); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// showAge renders an age in days when whole.
func showAge(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

type summaryCmd struct {
	locateFlags `embed:""`
	AgentID     string `arg:"" name:"agent-id" help:"The session's agent_id (or its Codex thread id), as listed by \"atm-agent-mcp sessions\"."`
}

// Help is shown by "atm-agent-mcp summary --help".
func (summaryCmd) Help() string {
	return `Prints the summary the session wrote when it was closed with agent_close {summary: true} or at the proxy's shutdown: what a resume gives a new thread when the session's own thread cannot be continued. A session without one (most: a resume continues the agent's own thread) makes the command say so on stderr, with the session's last result, and exit 1.`
}

// noSummary is summary's error for a session without a saved summary:
// what the registry kept instead (its thread, which a resume continues;
// its turns and last result).
func noSummary(s registry.Session) error {
	msg := fmt.Sprintf("session %s (%s, %s, last active %s) has no saved summary: the agent writes one only when asked "+
		"(agent_close with summary: true), or at a shutdown that leaves it time",
		s.AgentID, s.Identity, s.Status, s.LastActive.UTC().Format(time.RFC3339))
	if s.BackendID != "" {
		msg += fmt.Sprintf("; its thread %s is kept: codex (or agent_start) with agent_id %s continues it", s.BackendID, s.AgentID)
	}
	if w := worktreeLine(s.Worktree); w != "" {
		msg += "; " + w
	}
	if s.LastResult != "" {
		msg += fmt.Sprintf("\nits last result (turn %d):\n%s", s.Turns, s.LastResult)
	}
	return errors.New(msg)
}

// worktreeLine says where an isolated session's work is ("" for a session
// without a worktree).
func worktreeLine(w *registry.Worktree) string {
	switch {
	case w == nil:
		return ""
	case w.Released == "removed":
		return fmt.Sprintf("its worktree %s was removed with its branch %s (it held no change)", w.Path, w.Branch)
	case w.Released == "kept":
		s := fmt.Sprintf("its work is kept in its worktree: branch %s at %s", w.Branch, w.Path)
		if w.Stat != "" {
			s += " (" + w.Stat + ")"
		}
		return s
	}
	return fmt.Sprintf("its worktree: branch %s at %s (a resume re-enters it)", w.Branch, w.Path)
}

func (c *summaryCmd) Run(env *runEnv) error {
	if err := registry.ValidateAgentID(c.AgentID); err != nil {
		return usageError{err}
	}
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
	rows, err := scan(env, dir, registry.Filter{})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(rows, func(r sessionRow) bool { return r.AgentID == c.AgentID || r.BackendID == c.AgentID })
	if i < 0 {
		if team := teamOfSession(cfg.Home, regTeam, c.AgentID); team != "" {
			return fmt.Errorf("no session %q in team %q; it is in team %s: atm-agent-mcp summary --team %s %s", c.AgentID, regTeam, team, team, c.AgentID)
		}
		return fmt.Errorf("no session %q in team %q (see \"atm-agent-mcp sessions\")", c.AgentID, regTeam)
	}
	s := rows[i]
	var text string
	if s.BackendID != "" {
		text, err = dir.ReadSummary(s.Identity, s.BackendID)
	}
	if s.BackendID == "" || errors.Is(err, fs.ErrNotExist) {
		return noSummary(s.Session)
	}
	if err != nil {
		return err
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if w := worktreeLine(s.Worktree); w != "" {
		text += "\n[" + w + "]\n"
	}
	_, err = io.WriteString(env.stdout, text)
	return err
}
