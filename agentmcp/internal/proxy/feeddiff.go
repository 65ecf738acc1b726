package proxy

import (
	"context"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// feedDiffs reads isolated agents' changes for the feed (feed.Diffs)
// with the places' workspace (on the agent's host): the change of an
// agent's worktree against its base, committed, uncommitted and
// untracked together.
type feedDiffs struct{ ps *places.Places }

func (d feedDiffs) Stat(ctx context.Context, s *session.Session) (feed.DiffStat, bool, error) {
	p := s.Place()
	if p == nil {
		return feed.DiffStat{}, false, nil
	}
	diff, err := d.ps.Diff(ctx, p, workspace.DiffRequest{Stat: true})
	if err != nil {
		return feed.DiffStat{}, true, err
	}
	return feed.DiffStat{Files: diff.Stat.Files, Added: diff.Stat.Added, Removed: diff.Stat.Removed}, true, nil
}

func (d feedDiffs) Patch(ctx context.Context, s *session.Session, limit int) (string, bool, bool, error) {
	p := s.Place()
	if p == nil {
		return "", false, false, nil
	}
	diff, err := d.ps.Diff(ctx, p, workspace.DiffRequest{Limit: limit})
	if err != nil {
		return "", false, true, err
	}
	return diff.Patch, diff.PatchMore, true, nil
}

// feedDiffs is the feed's reader of changes: nil without places (git is
// missing).
func (s *Server) feedDiffs() feed.Diffs {
	if s.places == nil {
		return nil
	}
	return feedDiffs{s.places}
}
