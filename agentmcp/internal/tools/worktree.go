package tools

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// WorktreeView is an isolated session's worktree as the tools show it:
// where it is, its branch and base, its ports while the session is live,
// what a new one's setup said, and what the session's close did with it.
// Fields are in the order of their JSON names.
type WorktreeView struct {
	Base    string `json:"base"`
	BaseRef string `json:"base_ref,omitempty"`
	Branch  string `json:"branch"`
	// Copied are the untracked files copied in (.worktreeinclude).
	Copied []string `json:"copied,omitempty"`
	// Note says what a resume could not give back.
	Note      string     `json:"note,omitempty"`
	Path      string     `json:"path"`
	Ports     *PortsView `json:"ports,omitempty"`
	Released  string     `json:"released,omitempty"` // removed or kept, once closed
	Resumed   bool       `json:"resumed,omitempty"`
	SetupTail string     `json:"setup_tail,omitempty"`
	Source    string     `json:"source"`
	Stat      string     `json:"stat,omitempty"`
}

// PortsView is a session's block of ports.
type PortsView struct {
	Base  int `json:"base"`
	Count int `json:"count"`
}

// worktreeOfRecord is the view of a recorded worktree (nil for none).
func worktreeOfRecord(w *registry.Worktree) *WorktreeView {
	if w == nil {
		return nil
	}
	v := &WorktreeView{Path: w.Path, Branch: w.Branch, Base: w.Base, BaseRef: w.BaseRef, Source: w.Source, Released: w.Released, Stat: w.Stat}
	if w.PortCount > 0 {
		v.Ports = &PortsView{Base: w.PortBase, Count: w.PortCount}
	}
	return v
}

// worktreeOf is the view of a session's worktree: its live place, else
// its record (nil without one).
func worktreeOf(s *session.Session) *WorktreeView {
	if p := s.Place(); p != nil {
		return worktreeOfPlace(p)
	}
	return worktreeOfRecord(s.Record().Worktree)
}

// worktreeOfPlace is the view of a live place.
func worktreeOfPlace(p *session.Place) *WorktreeView {
	v := &WorktreeView{Path: p.Path, Branch: p.Branch, Base: p.Base, BaseRef: p.BaseRef, Source: p.Source, Copied: p.Copied,
		SetupTail: p.SetupTail, Resumed: p.Resumed, Note: p.Note}
	if p.PortCount > 0 {
		v.Ports = &PortsView{Base: p.PortBase, Count: p.PortCount}
	}
	return v
}

// line is the view in one line: "worktree /r/.atm/worktrees/alice on
// branch atm/alice from 5e1c0a2d1f3b (ports 20010-20019)".
func (v *WorktreeView) line() string {
	base := v.Base
	if len(base) > 12 {
		base = base[:12]
	}
	s := "worktree " + v.Path + " on branch " + v.Branch + " from " + base
	if v.Ports != nil {
		s += fmt.Sprintf(" (ports %d-%d)", v.Ports.Base, v.Ports.Base+v.Ports.Count-1)
	}
	if v.Resumed {
		s += ", re-entered"
	}
	if v.Note != "" {
		s += "; " + v.Note
	}
	return s
}

// withWorktree adds a started (or resumed) session's worktree to its
// result: a line of text (once) and "worktree" in the structured result.
func withWorktree(res *mcpconn.ToolResult, s *session.Session) *mcpconn.ToolResult {
	v := worktreeOf(s)
	if res == nil || v == nil || res.Task != nil || res.Input != nil {
		return res
	}
	out := *res
	if !strings.Contains(res.Text, "[worktree "+v.Path+" ") {
		out.Text = strings.TrimRight(res.Text, "\n") + "\n\n[" + v.line() + "]"
	}
	if m, ok := res.Structured.(map[string]any); ok {
		m = maps.Clone(m)
		m["worktree"] = v
		out.Structured = m
	}
	return &out
}

// warned adds a warning to a result: a line of text and an entry of
// "warnings" in the structured result.
func warned(res *mcpconn.ToolResult, w string) *mcpconn.ToolResult {
	if res == nil || w == "" || res.Task != nil || res.Input != nil {
		return res
	}
	out := *res
	out.Text = strings.TrimRight(res.Text, "\n") + "\n\n(warning: " + w + ")"
	if m, ok := res.Structured.(map[string]any); ok {
		m = maps.Clone(m)
		ws, _ := m["warnings"].([]string)
		m["warnings"] = append(ws[:len(ws):len(ws)], w)
		out.Structured = m
	}
	return &out
}

// isolation is the isolation of a new session: the call's, else its role
// preset's, else the configured one.
func (e *Env) isolation(arg, role string) string {
	if arg != "" {
		return arg
	}
	if v := e.cfg.RoleIsolation[role]; v != "" {
		return v
	}
	return firstNonEmpty(e.cfg.Isolation, session.IsolationNone)
}

// sharedCheckout says, for a session without isolation, which other live
// sessions without isolation work in the same repository, and how to give
// each its own ("" when none does).
func (e *Env) sharedCheckout(s *session.Session) string {
	rec := s.Record()
	if rec.Worktree != nil || rec.RepoRoot == "" {
		return ""
	}
	var others []string
	for _, o := range e.m.Live() {
		or := o.Record()
		if o == s || or.Worktree != nil || or.RepoRoot != rec.RepoRoot {
			continue
		}
		others = append(others, or.Identity+" ("+or.AgentID+")")
	}
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf("%s also works in %s without isolation: their edits land in the same files and one git history. "+
		"Give each agent its own worktree and branch with isolation \"worktree\" (on codex or agent_start, or isolation = \"worktree\" "+
		"in [plugins.atm-agent-mcp] or a role preset)", strings.Join(others, ", "), rec.RepoRoot)
}

// placeCwd maps a cwd a call gives an isolated session into its worktree:
// a directory of the checkout it came from is the same directory in the
// worktree; one in the worktree stays; any other is refused (the agent
// would leave its worktree).
func placeCwd(s *session.Session, cwd string) (string, error) {
	p := s.Place()
	if p == nil {
		return cwd, nil
	}
	if in(cwd, p.Path) {
		return cwd, nil
	}
	if in(cwd, p.Source) {
		rel, _ := filepath.Rel(p.Source, cwd)
		mapped := filepath.Join(p.Path, rel)
		if st, err := os.Stat(mapped); err != nil || !st.IsDir() {
			return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "cwd", "cwd": cwd, "worktree": p.Path},
				"cwd %q is %s in the agent's worktree, which has no such directory", cwd, mapped)
		}
		return mapped, nil
	}
	return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "cwd", "cwd": cwd, "worktree": p.Path},
		"cwd %q is outside the agent's worktree %s (and the checkout %s it was made from): an isolated agent works in its worktree only", cwd, p.Path, p.Source)
}

// in reports whether path is dir or below it.
func in(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
