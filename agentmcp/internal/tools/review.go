package tools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// This file is agent_diff and agent_merge: the lead looks at an agent's
// change and brings it in (package places over workspace does the git
// side; review_view.go shapes what the client gets).

// errNoGit answers agent_diff and agent_merge in a serve without git.
var errNoGit = proxyerr.New(proxyerr.ErrInvalidSessionParams, nil,
	"agent_diff and agent_merge need git, which was not found (or is older than 2.38) when this serve started")

// agentDiff shows a session's change (see tools.json).
func (e *Env) agentDiff(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_diff", "agent_id", "stat", "path", "offset"); err != nil {
		return nil, err
	}
	s, err := e.lookup(c.Args)
	if err != nil {
		return nil, err
	}
	stat, _, err := c.Args.Bool("stat")
	if err != nil {
		return nil, err
	}
	path, err := c.Args.Str("path")
	if err != nil {
		return nil, err
	}
	offset, _, err := c.Args.Int("offset")
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "offset"}, "argument \"offset\" must not be negative")
	}
	if e.cfg.Places == nil {
		return nil, errNoGit
	}
	limit := e.maxResultChars()
	req := workspace.DiffRequest{Stat: stat, Offset: offset, Limit: limit}
	if path != "" {
		req.Paths = []string{path}
	}
	rec := s.Record()
	v := &DiffView{AgentID: rec.AgentID, Identity: rec.Identity}
	var d *workspace.Diff
	if p, err := reviewPlace(s); err != nil {
		return nil, err
	} else if p != nil {
		d, err = e.cfg.Places.Diff(ctx, p, req)
		if err != nil {
			return nil, err
		}
	} else {
		if rec.StartHead == "" {
			return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"agent_id": rec.AgentID, "reason": "no_start"},
				"session %s works without isolation, and the commit it started from is not recorded (its cwd %s is outside git, or an older serve started it): there is nothing to diff it against",
				rec.AgentID, rec.Cwd)
		}
		dir := firstNonEmpty(rec.RepoRoot, rec.Cwd)
		if d, err = e.cfg.Places.DiffCheckout(ctx, rec.Host, dir, rec.StartHead, req); err != nil {
			return nil, err
		}
		v.Note = fmt.Sprintf("%s works without isolation, in %s itself: this is that checkout's change since the HEAD it started from (%s), "+
			"committed and not, and it holds anyone else's edits of that checkout too", rec.Identity, dir, shortID(rec.StartHead))
	}
	v.fill(d)
	text := v.fit(limit)
	return &mcpconn.ToolResult{Text: text, Structured: v}, nil
}

// agentMerge brings an isolated agent's work into the lead's checkout (see
// tools.json). The session is held meanwhile (no turn starts); the audit
// says who merged what, how, with which check, and how it went.
func (e *Env) agentMerge(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_merge", "agent_id", "strategy", "message", "check", "on_conflict", "to"); err != nil {
		return nil, err
	}
	s, err := e.lookup(c.Args)
	if err != nil {
		return nil, err
	}
	str, err := c.Args.Strs("strategy", "message", "check", "on_conflict", "to")
	if err != nil {
		return nil, err
	}
	if e.cfg.Places == nil {
		return nil, errNoGit
	}
	rec := s.Record()
	p, err := reviewPlace(s)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"agent_id": rec.AgentID, "reason": "not_isolated"},
			"session %s works without isolation, in %s itself: its changes are in that checkout already (agent_diff shows them); "+
				"agent_merge brings in the branch of an agent started with isolation \"worktree\"", rec.AgentID, rec.Cwd)
	}
	check := e.cfg.MergeCheck
	if c.Args.Has("check") {
		check = str["check"]
	}
	strategy := workspace.Strategy(firstNonEmpty(str["strategy"], string(workspace.Squash)))
	message := str["message"]
	if message == "" && strategy == workspace.Squash {
		message = firstLine(rec.LastResult)
	}
	req := workspace.MergeRequest{Strategy: strategy, Message: message, Check: check, ToBranch: str["to"] == "branch",
		Author:   workspace.Signature{Name: rec.Identity, Email: rec.Identity + "@" + e.cfg.Team},
		Progress: func(pr workspace.Progress) { c.Progress.Send(progressText(pr)) }}
	var merged *places.Merged
	var mergeErr error
	err = s.Hold(ctx, func(ctx context.Context) error {
		merged, mergeErr = e.cfg.Places.Merge(ctx, p, req)
		return nil
	})
	if errors.Is(err, session.ErrBusy) {
		err = proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, map[string]any{"agent_id": rec.AgentID, "reason": "agent_busy"},
			"refused: the turn of %s (%s) is running or waiting; nothing was changed. Wait for it to end (agent_wait), then merge", rec.Identity, rec.AgentID)
	}
	if err == nil {
		err = mergeErr
	}
	v := &MergeView{AgentID: rec.AgentID, Identity: rec.Identity, Strategy: string(strategy)}
	var ce *workspace.ConflictError
	var ke *workspace.CheckError
	switch {
	case errors.As(err, &ce):
		v.LeadBranch, v.Old, v.Conflicts = ce.LeadBranch, ce.Lead, ce.Conflicts
		if str["on_conflict"] == "mail" {
			if merr := e.cfg.Places.MailConflict(ctx, p, ce); merr != nil {
				e.log.Warn("cannot mail the agent its conflict", "agent_id", rec.AgentID, "err", merr)
			} else {
				v.Mailed = true
			}
		}
	case errors.As(err, &ke):
		v.Check = checkView(ke.Result)
	case err != nil:
		e.auditMerge(rec, req, "refused: "+err.Error())
		return nil, err
	default:
		v.fill(merged)
	}
	text := v.fit(e.maxResultChars(), p.Branch, str["on_conflict"])
	e.auditMerge(rec, req, v.outcome())
	return &mcpconn.ToolResult{Text: text, Structured: v, IsError: !v.Merged}, nil
}

// auditMerge records a merge: who asked (the serve's identity), whose
// work, how, with which check, and how it went.
func (e *Env) auditMerge(rec registry.Session, req workspace.MergeRequest, outcome string) {
	into := "the lead's branch"
	if req.ToBranch {
		into = "branch " + workspace.PRBranchPrefix + "<name>"
	}
	what := fmt.Sprintf("%s of %s's work into %s by %s", firstNonEmpty(string(req.Strategy), "squash"), rec.Identity, into, e.cfg.Identity)
	if req.Check != "" {
		what += fmt.Sprintf(", check %q", req.Check)
	} else {
		what += ", no check"
	}
	e.cfg.Audit.Append(registry.Entry{Event: "agent_merge", AgentID: rec.AgentID, Identity: rec.Identity, Summary: what, Outcome: outcome})
}

// reviewPlace is the session's worktree: its live place, else the one its
// record names when its close kept it (nil without isolation). A worktree
// its close removed (it held no change) is the client's error.
func reviewPlace(s *session.Session) (*session.Place, error) {
	if p := s.Place(); p != nil {
		return p, nil
	}
	rec := s.Record()
	w := rec.Worktree
	if w == nil {
		return nil, nil
	}
	if w.Released == "removed" {
		return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"agent_id": rec.AgentID, "reason": "no_worktree"},
			"the worktree of %s was removed with its branch %s when it was closed (it held no change): there is nothing to diff or merge", rec.AgentID, w.Branch)
	}
	name := w.Name
	if name == "" {
		name = filepath.Base(w.Path)
	}
	return &session.Place{AgentID: rec.AgentID, Identity: rec.Identity, Host: rec.Host, Name: name, Path: w.Path, Cwd: rec.Cwd, Branch: w.Branch,
		Base: w.Base, BaseRef: w.BaseRef, Source: w.Source}, nil
}

// maxResultChars is the cap of a result's text and structured content.
func (e *Env) maxResultChars() int {
	if e.cfg.MaxResultChars > 0 {
		return e.cfg.MaxResultChars
	}
	return defaultMaxResultChars
}

// defaultMaxResultChars is max_result_chars' default.
const defaultMaxResultChars = 80000

// firstLine is the first non-empty line of s, clipped: a commit's subject.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return session.Clip(l, 100)
		}
	}
	return ""
}

// progressText is a merge's progress as the client sees it.
func progressText(p workspace.Progress) string {
	switch {
	case p.Phase == "check" && p.Elapsed > 0 && p.Line != "":
		return fmt.Sprintf("check running for %s: %s", p.Elapsed.Round(100_000_000), session.Clip(p.Line, 120))
	case p.Phase == "check" && p.Elapsed > 0:
		return fmt.Sprintf("check running for %s", p.Elapsed.Round(100_000_000))
	case p.Line != "":
		return p.Phase + ": " + session.Clip(p.Line, 120)
	}
	return map[string]string{"commit": "reading the agent's work", "merge": "computing the merge",
		"check": "running the check", "update": "updating the lead's checkout"}[p.Phase]
}

// shortID is a commit id's first 12 characters.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
