package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// DiffView is agent_diff's result. Both its JSON and its text fit within
// max_result_chars: a client such as Claude Code shows the model the
// structuredContent whole and refuses a result over its limit, so the
// patch is paged (next_offset reads on) and, when even the file list is
// too long, files are left out (files_omitted; the stat counts them).
type DiffView struct {
	AgentID      string                 `json:"agent_id"`
	Identity     string                 `json:"identity"`
	Isolated     bool                   `json:"isolated"`
	Base         string                 `json:"base"`
	Branch       string                 `json:"branch,omitempty"`
	Head         string                 `json:"head"`
	Uncommitted  bool                   `json:"uncommitted"`
	Files        []workspace.FileChange `json:"files"`
	FilesOmitted int                    `json:"files_omitted,omitempty"`
	Stat         workspace.DiffStat     `json:"stat"`
	Patch        string                 `json:"patch,omitempty"`
	PatchOffset  int                    `json:"patch_offset"`
	PatchTotal   int                    `json:"patch_total_chars"`
	PatchMore    bool                   `json:"patch_more"`
	NextOffset   int                    `json:"next_offset,omitempty"`
	Note         string                 `json:"note,omitempty"`
}

func (v *DiffView) fill(d *workspace.Diff) {
	v.Isolated, v.Base, v.Branch, v.Head, v.Uncommitted = d.Isolated, d.Base, d.Branch, d.Head, d.Uncommitted
	v.Files, v.Stat = d.Files, d.Stat
	v.Patch, v.PatchOffset, v.PatchTotal, v.PatchMore = d.Patch, d.PatchOffset, d.PatchTotal, d.PatchMore
	v.setNext()
}

func (v *DiffView) setNext() {
	v.NextOffset = 0
	if v.PatchMore {
		v.NextOffset = v.PatchOffset + utf8.RuneCountInString(v.Patch)
	}
}

// fit cuts the page of the patch (at a line's end where it can), then the
// file list, until the view's JSON and its text fit within limit
// characters, and returns the text.
func (v *DiffView) fit(limit int) string {
	for range 1000 {
		text := v.text()
		over := max(jsonLen(v), utf8.RuneCountInString(text)) - limit
		if over <= 0 {
			return text
		}
		switch r := []rune(v.Patch); {
		case len(r) > 0:
			// A character of the patch takes one or more in the JSON
			// (escapes): cut in proportion, a little more.
			perChar := float64(jsonLen(v.Patch)) / float64(len(r))
			keep := max(len(r)-int(float64(over)/perChar)-64, 0)
			if i := strings.LastIndexByte(string(r[:keep]), '\n'); i >= 0 && i+1 >= keep/2 {
				keep = utf8.RuneCountInString(string(r[:keep])[:i+1])
			}
			v.Patch, v.PatchMore = string(r[:keep]), true
			v.setNext()
		case len(v.Files) > 1:
			n := max(1, len(v.Files)-max(1, over/60))
			v.FilesOmitted += len(v.Files) - n
			v.Files = v.Files[:n]
		default:
			return text // what is left is small
		}
	}
	return v.text()
}

// text is the view as the text content: a header, the stat, one line per
// file, the note, the page of the patch and where the next page starts.
func (v *DiffView) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): ", v.Identity, v.AgentID)
	if v.Branch != "" {
		fmt.Fprintf(&b, "branch %s, ", v.Branch)
	}
	fmt.Fprintf(&b, "change from %s to %s", shortID(v.Base), shortID(v.Head))
	if v.Uncommitted {
		b.WriteString(" and its uncommitted work")
	}
	fmt.Fprintf(&b, "\n%s\n", v.Stat)
	for _, f := range v.Files {
		name := f.Path
		if f.OldPath != "" {
			name = f.OldPath + " -> " + f.Path
		}
		if f.Binary {
			fmt.Fprintf(&b, "%s %s (binary)\n", f.Status, name)
			continue
		}
		fmt.Fprintf(&b, "%s %s +%d -%d\n", f.Status, name, f.Added, f.Removed)
	}
	if v.FilesOmitted > 0 {
		fmt.Fprintf(&b, "(%d more files left out to fit the result: give path to see them)\n", v.FilesOmitted)
	}
	if v.Note != "" {
		b.WriteString("(" + v.Note + ")\n")
	}
	if v.Patch != "" {
		b.WriteString("\n" + v.Patch)
	}
	if v.PatchMore {
		fmt.Fprintf(&b, "\n[patch characters %d-%d of %d: agent_diff {agent_id: %q, offset: %d} reads on]\n",
			v.PatchOffset, v.NextOffset, v.PatchTotal, v.AgentID, v.NextOffset)
	}
	return b.String()
}

// MergeView is agent_merge's result: what the merge did, or why nothing
// changed (a conflict, with its files and hunks; a failing check, with its
// exit status and output tail).
type MergeView struct {
	AgentID    string               `json:"agent_id"`
	Identity   string               `json:"identity"`
	Merged     bool                 `json:"merged"`
	Strategy   string               `json:"strategy,omitempty"`
	Lead       string               `json:"lead,omitempty"`
	LeadBranch string               `json:"lead_branch,omitempty"`
	Old        string               `json:"old,omitempty"`
	New        string               `json:"new,omitempty"`
	Commit     string               `json:"commit,omitempty"`
	Commits    []string             `json:"commits,omitempty"`
	Committed  string               `json:"committed,omitempty"`
	Branch     string               `json:"branch,omitempty"`
	Stat       *workspace.DiffStat  `json:"stat,omitempty"`
	Check      *CheckView           `json:"check,omitempty"`
	Conflicts  []workspace.Conflict `json:"conflicts,omitempty"`
	Mailed     bool                 `json:"mailed,omitempty"`
	Told       []string             `json:"told,omitempty"`
	// Summary is the text without the hunks: what happened and what comes
	// next, for a client that shows the model only the structured content
	// (Claude Code does).
	Summary string `json:"summary"`
}

// CheckView is how a merge's check ended.
type CheckView struct {
	Command    string `json:"command"`
	Passed     bool   `json:"passed"`
	Status     string `json:"status"`
	ExitCode   int    `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Tail       string `json:"output_tail,omitempty"`
}

func checkView(r workspace.CommandResult) *CheckView {
	return &CheckView{Command: r.Command, Passed: r.Passed(), Status: r.Status(), ExitCode: r.ExitCode, Signal: r.Signal,
		DurationMS: r.Duration.Milliseconds(), Tail: r.Tail}
}

func (v *MergeView) fill(m *places.Merged) {
	r := m.MergeResult
	v.Merged, v.Strategy, v.Lead, v.LeadBranch, v.Old, v.New = true, string(r.Strategy), r.Lead, r.LeadBranch, r.Old, r.New
	v.Commit, v.Commits, v.Committed, v.Branch, v.Stat, v.Told = r.Commit, r.Commits, r.Committed, r.Branch, &r.Stat, m.Told
	if r.Check != nil {
		v.Check = checkView(*r.Check)
	}
}

// fit sets the summary, clips the conflicts' hunks, then leaves hunks out,
// until the view's JSON fits within limit characters, and returns the
// text.
func (v *MergeView) fit(limit int, branch, onConflict string) string {
	v.Summary = v.text(branch, onConflict, false)
	for _, clip := range []int{2000, 400, 100, 0} {
		if jsonLen(v) <= limit {
			break
		}
		for i := range v.Conflicts {
			hs := v.Conflicts[i].Hunks
			if clip == 0 {
				v.Conflicts[i].Hunks = hs[:min(len(hs), 1)]
				hs = v.Conflicts[i].Hunks
			}
			for j := range hs {
				hs[j].Lead, hs[j].Agent, hs[j].Base = session.Clip(hs[j].Lead, max(clip, 100)), session.Clip(hs[j].Agent, max(clip, 100)),
					session.Clip(hs[j].Base, max(clip, 100))
			}
		}
	}
	return v.text(branch, onConflict, true)
}

// text says what happened to the agent's branch, and what comes next;
// with hunks, each conflict's hunks too.
func (v *MergeView) text(branch, onConflict string, hunks bool) string {
	var b strings.Builder
	switch {
	case len(v.Conflicts) > 0:
		fmt.Fprintf(&b, "not merged: %s's branch %s conflicts with %s (at %s) in %d file(s); nothing was changed anywhere.\n",
			v.Identity, branch, v.LeadBranch, shortID(v.Old), len(v.Conflicts))
		for _, c := range v.Conflicts {
			fmt.Fprintf(&b, "%s (%s)", c.Path, c.Kind)
			if c.Commit != "" {
				fmt.Fprintf(&b, " replaying %s", shortID(c.Commit))
			}
			b.WriteString("\n")
			for _, h := range c.Hunks {
				if !hunks {
					break
				}
				fmt.Fprintf(&b, "  at line %d, the lead's:\n%s  the agent's:\n%s", h.Line, indent(h.Lead), indent(h.Agent))
			}
		}
		if v.Mailed {
			fmt.Fprintf(&b, "%s was mailed to bring its branch up to date with %s and resolve them (its next turn); merge again once it has.\n", v.Identity, v.LeadBranch)
		} else if onConflict != "mail" {
			fmt.Fprintf(&b, "Tell %s to bring its branch up to date with %s and resolve them (on_conflict \"mail\" does), then merge again.\n", v.Identity, v.LeadBranch)
		} else {
			fmt.Fprintf(&b, "The mail to %s could not be sent (see the log): tell it to bring its branch up to date with %s.\n", v.Identity, v.LeadBranch)
		}
	case v.Check != nil && !v.Merged:
		fmt.Fprintf(&b, "not merged: the check %q failed (%s, after %s); the lead's branch did not move, nothing was changed. Its output ends with:\n%s",
			v.Check.Command, v.Check.Status, time.Duration(v.Check.DurationMS)*time.Millisecond, v.Check.Tail)
	case v.Branch != "":
		fmt.Fprintf(&b, "left the %s of %s's work on branch %s (commit %s, on %s at %s): %s. The lead's checkout and branch did not move, nothing was pushed: review or open a pull request from %s with your own tools.",
			v.Strategy, v.Identity, v.Branch, shortID(v.Commit), v.LeadBranch, shortID(v.Old), v.Stat, v.Branch)
	default:
		fmt.Fprintf(&b, "merged %s's work (branch %s) into %s by %s: %s → %s, %s.", v.Identity, branch, v.LeadBranch, v.Strategy,
			shortID(v.Old), shortID(v.New), v.Stat)
	}
	if v.Merged {
		if v.Check != nil {
			fmt.Fprintf(&b, " The check %q passed (%s).", v.Check.Command, time.Duration(v.Check.DurationMS)*time.Millisecond)
		}
		if v.Committed != "" {
			fmt.Fprintf(&b, " Its uncommitted work was first committed on its branch as %s.", shortID(v.Committed))
		}
		if len(v.Told) > 0 {
			fmt.Fprintf(&b, " Told %s that the base moved.", strings.Join(v.Told, ", "))
		}
	}
	return b.String()
}

// outcome is the audit's word for how the merge went.
func (v *MergeView) outcome() string {
	switch {
	case len(v.Conflicts) > 0:
		var files []string
		for _, c := range v.Conflicts {
			files = append(files, c.Path)
		}
		return "conflict: " + strings.Join(files, ", ") + map[bool]string{true: " (agent mailed)", false: ""}[v.Mailed]
	case !v.Merged && v.Check != nil:
		return "check failed: " + v.Check.Status
	case v.Branch != "":
		return "left on " + v.Branch + " at " + shortID(v.Commit)
	}
	s := "merged into " + v.LeadBranch + ": " + shortID(v.Old) + ".." + shortID(v.New)
	if v.Check != nil {
		s += ", check passed"
	}
	return s
}

// indent indents each line of s by four spaces (ending with a newline).
func indent(s string) string {
	if s == "" {
		return "    (nothing)\n"
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

// jsonLen is the length of v's JSON.
func jsonLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}
