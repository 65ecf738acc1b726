package places

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// This file is the review side of a place (agent_diff, agent_merge): the
// session's change, the merge of its work into the lead's checkout, and
// the mail that goes with a merge: to the agent whose work conflicts, and
// to every other live isolated agent of the repository once the lead's
// branch moved.

// Diff is the change of the session in p (its worktree against its base,
// read on its host): req's Place is p's.
func (ps *Places) Diff(ctx context.Context, p *session.Place, req workspace.DiffRequest) (*workspace.Diff, error) {
	m, err := ps.managerOf(ctx, p.Host)
	if err != nil {
		return nil, err
	}
	req.Place = workspacePlace(p)
	d, err := m.Diff(ctx, req)
	if err != nil {
		return nil, reviewError(err, p)
	}
	return d, nil
}

// DiffCheckout is the change of a session without isolation: the checkout
// holding dir (on host: "" is this machine) against the commit from, which
// the session started at.
func (ps *Places) DiffCheckout(ctx context.Context, host, dir, from string, req workspace.DiffRequest) (*workspace.Diff, error) {
	m, err := ps.managerOf(ctx, host)
	if err != nil {
		return nil, err
	}
	req.Dir, req.From = dir, from
	d, err := m.Diff(ctx, req)
	if err != nil {
		return nil, proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, map[string]any{"cwd": dir},
			"cannot read the change of %s against %s: %v", dir, short(from), err)
	}
	return d, nil
}

// Head is the commit the checkout holding dir (on host: "" is this
// machine) is at ("" outside git, or when the host cannot tell).
func (ps *Places) Head(ctx context.Context, host, dir string) string {
	m, err := ps.managerOf(ctx, host)
	if err != nil {
		ps.log.Debug("no HEAD to record", "host", host, "dir", dir, "err", err)
		return ""
	}
	h, err := m.Head(ctx, dir)
	if err != nil {
		ps.log.Debug("no HEAD to record", "host", host, "dir", dir, "err", err)
		return ""
	}
	return h
}

// Merged is what a merge did, with the agents told that the lead's branch
// moved.
type Merged struct {
	*workspace.MergeResult
	// Told are the identities of the other live isolated agents of the
	// repository that were mailed the news.
	Told []string
}

// Merge brings the work of the session in p into the lead's checkout (see
// workspace.Manager.Merge); req's Place is p's. After a merge into the
// lead's branch (not with ToBranch) every other live isolated agent of the
// same repository gets one mail saying that its base moved, with the diff
// stat, and the merged agent's worktree is looked at again by the radar
// (its change against its new base), quietly. The errors of a refusal are
// the client's (INVALID_SESSION_PARAMS, saying why and that nothing
// changed); a *workspace.ConflictError and a *workspace.CheckError come as
// they are: the caller reports them as outcomes.
func (ps *Places) Merge(ctx context.Context, p *session.Place, req workspace.MergeRequest) (*Merged, error) {
	m, err := ps.managerOf(ctx, p.Host)
	if err != nil {
		return nil, err
	}
	req.Place = workspacePlace(p)
	res, err := m.Merge(ctx, req)
	switch {
	case err != nil && res != nil: // merged; the agent's branch lacks the commit of its work (nothing is lost)
		ps.log.Error("merged, but the agent's branch did not take the commit of its work", "agent_id", p.AgentID, "err", err)
	case errors.Is(err, workspace.ErrConflict) || errors.Is(err, workspace.ErrCheckFailed):
		return nil, err
	case err != nil:
		return nil, reviewError(err, p)
	}
	out := &Merged{MergeResult: res}
	if req.ToBranch {
		return out, nil
	}
	ps.mu.Lock()
	_, live := ps.live[p.AgentID]
	ps.mu.Unlock()
	if live {
		ps.queue(p, true)
	}
	out.Told = ps.baseMoved(ctx, p, res)
	return out, nil
}

// MailConflict tells the agent of p that its work does not merge into the
// lead's branch, naming the files, and to bring its branch up to date: a
// mail from the lead (its next turn, with auto-mail).
func (ps *Places) MailConflict(ctx context.Context, p *session.Place, ce *workspace.ConflictError) error {
	if ps.cfg.ATM == nil {
		return errors.New("places: no ATM client to mail with")
	}
	var files []string
	for _, c := range ce.Conflicts {
		files = append(files, c.Path+" ("+c.Kind+")")
	}
	lead := ce.LeadBranch
	text := fmt.Sprintf("[merge] The lead could not merge your branch %s into %s (now at %s): it conflicts in %s. "+
		"Nothing was merged or changed. Bring your branch up to date with %s in your worktree (git rebase %s, or git merge %s), "+
		"resolve those files so that both changes hold, commit, and say so: the lead then merges again.",
		p.Branch, lead, short(ce.Lead), strings.Join(files, ", "), lead, lead, lead)
	return ps.mail(ctx, p.Identity, "merge conflict: "+p.Branch+" into "+lead, text)
}

// baseMoved mails every other live isolated agent of p's repository that
// the lead's branch moved, and returns their identities.
func (ps *Places) baseMoved(ctx context.Context, p *session.Place, res *workspace.MergeResult) []string {
	ps.mu.Lock()
	var others []agentInfo
	for id, a := range ps.live {
		if id != p.AgentID && sameRepository(a, p) {
			others = append(others, a)
		}
	}
	ps.mu.Unlock()
	if ps.cfg.ATM == nil {
		return nil
	}
	sort.Slice(others, func(i, j int) bool { return others[i].identity < others[j].identity })
	var told []string
	for _, o := range others {
		text := fmt.Sprintf("[merge] The work of %s (branch %s) was merged into %s, now at %s: %s. "+
			"Your branch %s starts from an older commit of %s: when you are idle, bring it up to date (git rebase %s, or git merge %s) "+
			"so that your own work merges cleanly.",
			p.Identity, p.Branch, res.LeadBranch, short(res.New), res.Stat, o.branch, res.LeadBranch, res.LeadBranch, res.LeadBranch)
		if err := ps.mail(ctx, o.identity, "base moved: "+res.LeadBranch, text); err != nil {
			ps.log.Warn("cannot tell an agent that its base moved", "to", o.identity, "err", err)
			continue
		}
		told = append(told, o.identity)
	}
	return told
}

// sameRepository reports whether the live agent a works in p's
// repository (on the same host, its common git directory; the checkout it
// came from when p was rebuilt from a record without it).
func sameRepository(a agentInfo, p *session.Place) bool {
	if a.host != p.Host {
		return false
	}
	if p.Repo != "" && a.repo != "" {
		return a.repo == p.Repo
	}
	return a.source == p.Source
}

// mail sends one mail from the lead, audited as atm_send.
func (ps *Places) mail(ctx context.Context, to, subject, text string) error {
	_, err := ps.cfg.ATM.Send(ctx, atmclient.SendRequest{From: ps.cfg.Lead, Team: ps.cfg.MailTeam, To: to, Text: text, Summary: subject})
	if ps.cfg.Audit != nil {
		ps.cfg.Audit.ATM("atm_send", ps.cfg.Lead, to, text, err)
	}
	return err
}

// reviewError maps workspace's refusals of a diff or merge to the
// client's errors: each says that nothing was changed.
func reviewError(err error, p *session.Place) error {
	data := map[string]any{"agent_id": p.AgentID, "branch": p.Branch, "lead": p.Source}
	why := func(reason string) map[string]any { data["reason"] = reason; return data }
	switch {
	case errors.Is(err, workspace.ErrLeadDirty):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, why("lead_dirty"),
			"refused: the lead's checkout %s has uncommitted changes (%s): commit or stash them, then merge again; nothing was changed",
			p.Source, detail(err, workspace.ErrLeadDirty))
	case errors.Is(err, workspace.ErrLeadBusy):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, why("lead_busy"),
			"refused: the lead's checkout %s is not on a branch at rest (%s); nothing was changed", p.Source, detail(err, workspace.ErrLeadBusy))
	case errors.Is(err, workspace.ErrNothingToMerge):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, why("nothing_to_merge"),
			"refused: nothing to merge from %s (%s); nothing was changed", p.Branch, detail(err, workspace.ErrNothingToMerge))
	case errors.Is(err, workspace.ErrLeadMoved):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, why("lead_moved"),
			"the lead's branch moved while the merge ran (%s): nothing was merged, the lead's checkout is as it was; merge again", detail(err, workspace.ErrLeadMoved))
	case errors.Is(err, workspace.ErrNotFound):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, why("no_worktree"),
			"the agent's worktree %s is gone (or is not one of ours): there is nothing to diff or merge", p.Path)
	}
	return proxyerr.Wrap(proxyerr.ErrInternal, err, data, "%v", err)
}

// detail is what err says after the sentinel's own words.
func detail(err, sentinel error) string {
	s := err.Error()
	if _, after, ok := strings.Cut(s, sentinel.Error()+": "); ok {
		return after
	}
	return strings.TrimPrefix(s, "workspace: ")
}
