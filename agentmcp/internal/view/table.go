package view

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// stateText is how a state reads in the terminal and on the page.
var stateText = map[string]string{
	feed.StateWorking: "working", feed.StateApproval: "waiting for approval", feed.StateWaitingMail: "waiting for mail",
	feed.StateIdle: "idle", feed.StateFailed: "failed", feed.StateClosed: "closed", feed.StateGone: "gone (serve exited)",
}

// WriteTable writes the per-agent table of a snapshot, as `status`
// prints it: the same facts as the page, one agent a line, its
// sub-agents under it.
func WriteTable(w io.Writer, s Snapshot, now time.Time) error {
	live := 0
	for _, sv := range s.Serves {
		if sv.Live {
			live++
		}
	}
	fmt.Fprintf(w, "team %s: %s, %d serve%s running%s%s\n", s.Team, summary(s.Agents), live, plural(live), spent(s), budgetText(budgetOf(s)))
	if len(s.Agents) == 0 {
		return nil
	}
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tKIND\tMODEL\tSTATE\tFOR\tDOING NOW\tTURNS\tTOKENS\tCOST\tBUDGET\tMAIL\tAPPROVALS\tBRANCH\tCHANGES\tSERVE")
	for _, a := range s.Agents {
		forText := ""
		if a.State != feed.StateClosed && a.State != feed.StateGone {
			t := a.StateSince
			if a.State == feed.StateWorking && a.Item != nil {
				t = a.Item.Since
			}
			forText = Duration(now.Sub(t))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", a.Identity, a.Kind, dash(a.Model), stateText[a.State], dash(forText),
			dash(clip(Doing(a), 60)), a.Turns, tokens(a), cost(a), budgetCell(a), a.UnreadMail, len(a.Approvals), dash(Branch(a)), dash(Changes(a)), a.Serve)
		for _, sub := range a.SubAgents {
			// Every cell, so that the columns stay one block.
			fmt.Fprintf(tw, "  └ %s\tsub-agent\t-\t%s\t-\t%s\t\t\t\t\t\t\t\t\t\n", clip(sub.ThreadID, 13), sub.Status, dash(clip(sub.Message, 60)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// Doing is what an agent does now, in a line.
func Doing(a feed.Agent) string {
	switch {
	case a.State == feed.StateApproval && len(a.Approvals) > 0:
		return "asks: " + a.Approvals[0].Question
	case a.Item != nil && a.Item.Type == "thinking":
		return "thinking"
	case a.Item != nil:
		return strings.ReplaceAll(a.Item.Type, "_", " ") + ": " + a.Item.Summary
	case a.State == feed.StateFailed && a.Last != nil:
		return firstNonEmpty(a.Last.Error, a.Last.Text)
	}
	return a.Problem
}

// summary is "3 agents: 1 working, 1 waiting for approval, …".
func summary(agents []feed.Agent) string {
	if len(agents) == 0 {
		return "no agents"
	}
	counts := map[string]int{}
	for _, a := range agents {
		counts[a.State]++
	}
	var parts []string
	for _, st := range []string{feed.StateApproval, feed.StateWorking, feed.StateWaitingMail, feed.StateIdle, feed.StateFailed, feed.StateClosed, feed.StateGone} {
		if counts[st] > 0 {
			parts = append(parts, strconv.Itoa(counts[st])+" "+stateText[st])
		}
	}
	return fmt.Sprintf("%d agent%s: %s", len(agents), plural(len(agents)), strings.Join(parts, ", "))
}

// Duration is a short duration: 45s, 3m05s, 2h10m.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	switch {
	case s < 60:
		return strconv.Itoa(s) + "s"
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}

func tokens(a feed.Agent) string {
	if a.Usage == nil {
		return "-"
	}
	n := a.Usage.TotalTokens
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

func cost(a feed.Agent) string {
	if a.Usage == nil || a.Usage.Cost == nil {
		return "-"
	}
	c := a.Usage.Cost
	if c.Currency == "USD" {
		return fmt.Sprintf("$%.4f", c.Amount)
	}
	return fmt.Sprintf("%.4f %s", c.Amount, c.Currency)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// spent is the team's tokens and cost, its sessions that no feed shows
// included (Snapshot.Totals): "; 5100 tokens, $0.0320" ("" when no agent
// reported any).
func spent(s Snapshot) string {
	var total int64
	costs := map[string]float64{}
	var currencies []string
	usages := make([]*backend.Usage, 0, len(s.Agents)+1)
	for _, a := range s.Agents {
		usages = append(usages, a.Usage)
	}
	usages = append(usages, s.Totals.Recorded)
	for _, u := range usages {
		if u == nil {
			continue
		}
		total += u.TotalTokens
		if c := u.Cost; c != nil {
			if _, ok := costs[c.Currency]; !ok {
				currencies = append(currencies, c.Currency)
			}
			costs[c.Currency] += c.Amount
		}
	}
	if total == 0 && len(costs) == 0 {
		return ""
	}
	out := "; " + strconv.FormatInt(total, 10) + " tokens"
	sort.Strings(currencies)
	for _, c := range currencies {
		out += ", " + cost(feed.Agent{Usage: &backend.Usage{Cost: &backend.Cost{Amount: costs[c], Currency: c}}})
	}
	return out
}

// budgetText is the team's budget for the summary line: "; budget 84 % of
// 10000 tokens" ("" without one).
func budgetText(b *session.BudgetState) string {
	if b == nil {
		return ""
	}
	s := fmt.Sprintf("; budget %d %% of %d tokens", b.Percent, b.Tokens)
	if b.Exceeded {
		s += " (used up: no new turn starts)"
	}
	return s
}

// budgetCell is an agent's budget in the table: "84%", "105%!" when used
// up, "-" without one.
func budgetCell(a feed.Agent) string {
	b := a.Budget
	if b == nil {
		return "-"
	}
	if b.Exceeded {
		return strconv.Itoa(b.Percent) + "%!"
	}
	return strconv.Itoa(b.Percent) + "%"
}

// Branch is the branch an agent works on: its own worktree's, else its
// checkout's.
func Branch(a feed.Agent) string {
	if w := a.Worktree; w != nil && w.Branch != "" {
		return w.Branch
	}
	return a.Branch
}

// Changes is an isolated agent's change against its base: "2 files +5 -1"
// ("" for an agent without a worktree, or before its stat was read).
func Changes(a feed.Agent) string {
	w := a.Worktree
	switch {
	case w == nil:
		return ""
	case w.Stat != nil:
		return fmt.Sprintf("%d file%s +%d -%d", w.Stat.Files, plural(w.Stat.Files), w.Stat.Added, w.Stat.Removed)
	case w.Released == "removed":
		return "none (removed)"
	}
	var files, added, removed int
	if n, _ := fmt.Sscanf(w.StatText, "%d files changed, %d insertions(+), %d deletions(-)", &files, &added, &removed); n == 3 {
		return fmt.Sprintf("%d file%s +%d -%d (%s)", files, plural(files), added, removed, w.Released)
	}
	return w.StatText
}
