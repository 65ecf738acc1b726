package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Strategy is how an agent's work enters the lead's branch.
type Strategy string

const (
	// Squash makes one commit of the agent's whole change (the default).
	Squash Strategy = "squash"
	// MergeCommit makes a merge commit of the lead's branch and the
	// agent's.
	MergeCommit Strategy = "merge"
	// Rebase replays the agent's commits one by one.
	Rebase Strategy = "rebase"
)

// AgentTrailer is the trailer naming the agent in the commits a merge
// makes.
const AgentTrailer = "Agent-Id"

// MergeRequest asks to bring an agent's work into the lead's checkout.
type MergeRequest struct {
	// Place is the agent's worktree (Name, AgentID, Path and Source are
	// read). required.
	Place *Place
	// Strategy. optional: "" means Squash.
	Strategy Strategy
	// Message is the squash or merge commit's message. optional: "" means
	// "Work of <identity> (<branch>)".
	Message string
	// Author signs the commit of the agent's uncommitted work and the
	// squash commit. required.
	Author Signature
	// Check is a command line run (sh -c) in a temporary worktree at the
	// result; the lead's branch moves only if it exits with 0. optional.
	Check string
	// ToBranch leaves the result on the branch atm-pr/<name> (made or
	// moved) instead of moving the lead's branch: for a pull request. (Not
	// under atm/: an agent's sandbox cannot move it.)
	ToBranch bool
	// Into is the lead's checkout. optional: "" means the checkout the
	// worktree was made from.
	Into string
	// Progress hears of each step and of the check while it runs.
	// optional.
	Progress func(Progress)
}

// MergeResult says what a merge did.
type MergeResult struct {
	Strategy Strategy `json:"strategy"`
	// Lead is the lead's checkout and LeadBranch its branch; Old and New
	// are the branch's commit before and after (equal with ToBranch).
	Lead       string `json:"lead"`
	LeadBranch string `json:"lead_branch"`
	Old        string `json:"old"`
	New        string `json:"new"`
	// Branch is, with ToBranch, the branch holding the result.
	Branch string `json:"branch,omitempty"`
	// Commit is the commit made (the squash or merge commit, or the last
	// replayed one).
	Commit string `json:"commit"`
	// Commits are the replayed commits (Rebase).
	Commits []string `json:"commits,omitempty"`
	// Committed is the commit of the agent's uncommitted work, made on its
	// branch before the merge ("" when there was none).
	Committed string `json:"committed,omitempty"`
	// Stat is the change the merge brings.
	Stat  DiffStat       `json:"stat"`
	Check *CommandResult `json:"check,omitempty"`
}

// ConflictError lists the files of a merge that does not go through:
// nothing was changed anywhere. It matches ErrConflict.
type ConflictError struct {
	Conflicts []Conflict
	// LeadBranch is the lead's branch the work did not merge into, and
	// Lead its commit then: what the agent has to bring its branch up to.
	LeadBranch, Lead string
}

func (e *ConflictError) Error() string {
	paths := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		paths[i] = c.Path + " (" + c.Kind + ")"
	}
	return "workspace: merge conflict in " + strings.Join(paths, ", ") + "; nothing was changed"
}

func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Merge brings an agent's work into the lead's checkout, on its current
// branch, without ever leaving it mid-merge:
//
//  1. Refused, nothing changed, when the lead's checkout is not on a branch
//     at rest (detached, or a merge, rebase… in progress), has uncommitted
//     changes to tracked files, or the agent has nothing to merge.
//  2. The agent's worktree is snapshot; its uncommitted work becomes a
//     commit (Author) that its branch takes only at step 6.
//  3. The result is computed by merge-tree, from the agent's base (see
//     baseOf), without a checkout. A conflict ends here: ConflictError,
//     nothing changed anywhere.
//  4. Check, if any, runs in a temporary worktree at the result (after a
//     dry run of step 5, so that a file in the way refuses first); failing,
//     it ends here: CheckError, nothing changed anywhere.
//  5. The lead's files and index go from the old commit to the result by
//     git's two-way merge (read-tree -m -u: it refuses, changing nothing,
//     rather than overwrite a local change or an untracked file), then the
//     branch moves by compare-and-swap from the commit the merge was
//     computed on; if that fails (the lead committed meanwhile) the files
//     go back and the error is ErrLeadMoved. There is never a MERGE_HEAD
//     and never a conflict marker in the lead's checkout. With ToBranch,
//     atm-pr/<name> takes the result instead.
//  6. The agent's branch takes its uncommitted work (compare-and-swap on
//     its HEAD; its index becomes the commit's, its files are untouched).
//     An error here comes with the result: the merge is done.
//  7. The record's base becomes the merged commit, so the next merge takes
//     only newer work.
func (m *Manager) Merge(ctx context.Context, req MergeRequest) (*MergeResult, error) {
	if req.Place == nil || req.Author.Name == "" || req.Author.Email == "" {
		return nil, errors.New("workspace: merge: Place and Author are required")
	}
	strategy := req.Strategy
	if strategy == "" {
		strategy = Squash
	}
	if strategy != Squash && strategy != MergeCommit && strategy != Rebase {
		return nil, fmt.Errorf("workspace: merge: unknown strategy %q", strategy)
	}
	progress := req.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	rec, err := m.recordOf(ctx, req.Place)
	if err != nil {
		return nil, err
	}
	lead := req.Into
	if lead == "" {
		lead = rec.Source
	}
	res := &MergeResult{Strategy: strategy, Lead: lead}
	leadRef, err := m.leadAtRest(ctx, lead, res)
	if err != nil {
		return nil, err
	}

	progress(Progress{Phase: "commit"})
	s, err := m.snapshotKeep(ctx, rec.Path)
	if err != nil {
		return nil, err
	}
	defer s.release()
	from, err := m.baseOf(ctx, *rec, s.head)
	if err != nil {
		return nil, err
	}
	trees, err := m.git.lines(ctx, lead, "rev-parse", from+"^{tree}", res.Old+"^{tree}")
	if err != nil || len(trees) != 2 {
		return nil, fmt.Errorf("workspace: merge: trees of %s and %s: %w", short(from), short(res.Old), err)
	}
	if trees[0] == s.tree {
		return nil, fmt.Errorf("workspace: merge %s: %w: no change against its base %s", rec.Branch, ErrNothingToMerge, short(from))
	}
	id := m.identity(ctx, lead, req.Author)
	theirs := s.head
	if s.uncommitted() {
		msg := fmt.Sprintf("Uncommitted work of %s\n\n%s: %s\n", nameFor(rec), AgentTrailer, rec.AgentID)
		if theirs, err = m.commitTree(ctx, lead, id.env, s.tree, msg, s.head); err != nil {
			return nil, err
		}
		res.Committed = theirs
	}

	progress(Progress{Phase: "merge"})
	if err := m.compute(ctx, lead, id, rec, req, res, theirs, from, trees[1]); err != nil {
		if ce := (*ConflictError)(nil); errors.As(err, &ce) {
			ce.LeadBranch, ce.Lead = res.LeadBranch, res.Old
		}
		return nil, err
	}
	files, _, err := m.diffTrees(ctx, lead, res.Old, res.Commit, diffOpts{})
	if err != nil {
		return nil, err
	}
	res.Stat = statOfFiles(files)
	if req.Check != "" {
		if !req.ToBranch {
			if err := m.canUpdate(ctx, lead, res); err != nil {
				return nil, err
			}
		}
		cr, err := m.runCheck(ctx, lead, rec.AgentID, rec.Name, res.Commit, req.Check, progress)
		res.Check = &cr
		if err != nil {
			return nil, err
		}
	}

	progress(Progress{Phase: "update"})
	if req.ToBranch {
		if err := m.leaveBranch(ctx, lead, rec, res); err != nil {
			return nil, err
		}
	} else if err := m.moveLead(ctx, lead, leadRef, res, strategy, rec.AgentID); err != nil {
		return nil, err
	}
	if res.Committed != "" {
		if err := m.commitOnBranch(ctx, rec, s, res.Committed); err != nil {
			// Its files are as they were: nothing is lost, but its branch
			// lacks the commit the lead's now holds.
			return res, err
		}
	}
	if req.ToBranch {
		return res, nil
	}
	rec.Base, rec.Landed = theirs, res.New
	if err := m.writeRecord(ctx, lead, rec); err != nil {
		m.log.Warn("merged, but the record's base did not move", "path", rec.Path, "err", err)
	}
	m.log.Info("merged", "agent_id", rec.AgentID, "strategy", strategy, "lead", lead, "branch", res.LeadBranch,
		"old", res.Old, "new", res.New, "check", req.Check)
	return res, nil
}

// ident is who signs the commits of a merge: env gives commit-tree the
// agent as author and a committer (git's configured one, or the agent when
// git has none: configured says which).
type ident struct {
	env        []string
	configured bool
}

func (m *Manager) identity(ctx context.Context, dir string, author Signature) ident {
	id := ident{env: author.env("AUTHOR")}
	if _, err := m.git.out(ctx, dir, "var", "GIT_COMMITTER_IDENT"); err == nil {
		id.configured = true
	} else {
		id.env = append(id.env, author.env("COMMITTER")...)
	}
	return id
}

// nameFor is how commit messages name the agent.
func nameFor(rec *record) string {
	if rec.Identity != "" {
		return rec.Identity
	}
	return rec.AgentID
}

// compute builds the result commit (res.Commit, res.Commits) from theirs
// onto res.Old.
func (m *Manager) compute(ctx context.Context, lead string, id ident, rec *record, req MergeRequest, res *MergeResult, theirs, from, oldTree string) error {
	trailer := "\n\n" + AgentTrailer + ": " + rec.AgentID + "\n"
	env := id.env
	switch res.Strategy {
	case Squash, MergeCommit:
		tree, conflicts, err := m.mergeOnto(ctx, lead, env, oldTree, theirs, from)
		if err != nil {
			return err
		}
		if conflicts != nil {
			return &ConflictError{Conflicts: conflicts}
		}
		if oldTree == tree {
			return fmt.Errorf("workspace: merge %s: %w: the lead's branch already has this change", rec.Branch, ErrNothingToMerge)
		}
		msg := strings.TrimSpace(req.Message)
		if res.Strategy == Squash {
			if msg == "" {
				msg = fmt.Sprintf("Work of %s (%s)", nameFor(rec), rec.Branch)
			}
			res.Commit, err = m.commitTree(ctx, lead, env, tree, msg+trailer, res.Old)
			return err
		}
		if msg == "" {
			msg = fmt.Sprintf("Merge %s (work of %s)", rec.Branch, nameFor(rec))
		}
		mergeEnv := env
		if id.configured {
			mergeEnv = nil // the lead merges: git's own identity
		}
		res.Commit, err = m.commitTree(ctx, lead, mergeEnv, tree, msg+trailer, res.Old, theirs)
		return err
	}
	commits, err := m.commitsToReplay(ctx, lead, from, theirs)
	if err != nil {
		return err
	}
	cur, curTree := res.Old, oldTree
	for _, c := range commits {
		tree, conflicts, err := m.mergeOnto(ctx, lead, env, curTree, c.id, c.parent)
		if err != nil {
			return err
		}
		if conflicts != nil {
			for i := range conflicts {
				conflicts[i].Commit = c.id
			}
			return &ConflictError{Conflicts: conflicts}
		}
		if tree == curTree {
			continue // already there
		}
		cenv := append([]string{"GIT_AUTHOR_NAME=" + c.name, "GIT_AUTHOR_EMAIL=" + c.email, "GIT_AUTHOR_DATE=" + c.date},
			env[2:]...) // the committer part of id.env, if any
		msg := c.msg
		if !strings.Contains(msg, AgentTrailer+": ") {
			msg = strings.TrimRight(msg, "\n") + trailer
		}
		if cur, err = m.commitTree(ctx, lead, cenv, tree, msg, cur); err != nil {
			return err
		}
		curTree = tree
		res.Commits = append(res.Commits, cur)
	}
	if cur == res.Old {
		return fmt.Errorf("workspace: merge %s: %w: the lead's branch already has these commits", rec.Branch, ErrNothingToMerge)
	}
	res.Commit = cur
	return nil
}

// leadAtRest returns the lead checkout's branch ref and sets res.Old and
// res.LeadBranch, refusing a checkout that is detached, in the middle of a
// merge, rebase, cherry-pick, revert or bisect, or that has uncommitted
// changes to tracked files.
func (m *Manager) leadAtRest(ctx context.Context, lead string, res *MergeResult) (string, error) {
	states := []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply", "BISECT_LOG"}
	args := []string{"rev-parse", "HEAD", "--path-format=absolute"}
	for _, s := range states {
		args = append(args, "--git-path", s)
	}
	l, err := m.git.lines(ctx, lead, append(args, "--symbolic-full-name", "HEAD")...)
	if err != nil {
		return "", fmt.Errorf("workspace: merge into %s: %w", lead, err)
	}
	if len(l) != len(states)+2 {
		return "", fmt.Errorf("workspace: merge into %s: rev-parse printed %q", lead, l)
	}
	res.Old = l[0]
	ref := l[len(l)-1]
	if !strings.HasPrefix(ref, "refs/heads/") {
		return "", fmt.Errorf("workspace: merge into %s: %w: HEAD is detached", lead, ErrLeadBusy)
	}
	res.LeadBranch = strings.TrimPrefix(ref, "refs/heads/")
	for i, p := range l[1 : len(l)-1] {
		if there, _ := m.fs.exists(ctx, p); there {
			return "", fmt.Errorf("workspace: merge into %s: %w: %s exists (an operation is in progress)", lead, ErrLeadBusy, states[i])
		}
	}
	out, err := m.git.run(ctx, lead, gitOpts{readOnly: true}, "status", "--porcelain=v2", "-z", "--untracked-files=no")
	if err != nil {
		return "", err
	}
	if dirty := statusPaths(out); len(dirty) > 0 {
		if len(dirty) > 10 {
			dirty = append(dirty[:10], "…")
		}
		return "", fmt.Errorf("workspace: merge into %s: %w: %s", lead, ErrLeadDirty, strings.Join(dirty, ", "))
	}
	return ref, nil
}

// canUpdate tries the lead's update without doing it (read-tree -n), so
// that an untracked file in the way refuses the merge before a check
// runs.
func (m *Manager) canUpdate(ctx context.Context, lead string, res *MergeResult) error {
	if _, err := m.git.out(ctx, lead, "read-tree", "-m", "-u", "-n", res.Old, res.Commit); err != nil {
		return fmt.Errorf("workspace: merge into %s: %w: %w", lead, ErrLeadDirty, err)
	}
	return nil
}

// commitOnBranch moves the agent's HEAD (its branch) from the snapshot's
// head to the commit of its uncommitted work, and makes its index that
// commit's (the snapshot's index; a reset if that cannot be installed):
// its files already are that commit's.
func (m *Manager) commitOnBranch(ctx context.Context, rec *record, s snap, commit string) error {
	if _, err := m.git.out(ctx, rec.Path, "update-ref", "-m", "atm-agent-mcp: commit the agent's work of a merge",
		"HEAD", commit, s.head); err != nil {
		return fmt.Errorf("workspace: commit the agent's work in %s: %w", rec.Path, err)
	}
	if err := s.installIndex(); err == nil {
		return nil
	} else {
		m.log.Debug("reset instead of installing the snapshot's index", "path", rec.Path, "err", err)
	}
	if _, err := m.git.out(ctx, rec.Path, "reset", "--quiet", "--mixed"); err != nil {
		return fmt.Errorf("workspace: reset the agent's index in %s: %w", rec.Path, err)
	}
	return nil
}

// PRBranchPrefix starts the branches that MergeRequest.ToBranch leaves.
const PRBranchPrefix = "atm-pr/"

// leaveBranch points atm-pr/<name> at the result.
func (m *Manager) leaveBranch(ctx context.Context, lead string, rec *record, res *MergeResult) error {
	res.Branch = PRBranchPrefix + rec.Name
	ref := "refs/heads/" + res.Branch
	old, _ := m.git.out(ctx, lead, "rev-parse", "--verify", "--quiet", ref)
	if _, err := m.git.out(ctx, lead, "update-ref", "-m", "atm-agent-mcp: "+string(res.Strategy)+" of "+rec.AgentID,
		ref, res.Commit, old); err != nil {
		return fmt.Errorf("workspace: leave %s: %w", res.Branch, err)
	}
	res.New = res.Old
	return nil
}

// moveLead updates the lead's files and index from res.Old to res.Commit,
// then its branch by compare-and-swap, putting the files back if the branch
// moved meanwhile.
func (m *Manager) moveLead(ctx context.Context, lead, ref string, res *MergeResult, strategy Strategy, agentID string) error {
	if cur, err := m.git.out(ctx, lead, "symbolic-ref", "--quiet", "HEAD"); err != nil || cur != ref {
		return fmt.Errorf("workspace: merge into %s: %w: it left %s", lead, ErrLeadMoved, ref)
	}
	if _, err := m.git.out(ctx, lead, "read-tree", "-m", "-u", res.Old, res.Commit); err != nil {
		return fmt.Errorf("workspace: merge into %s: %w: %w", lead, ErrLeadDirty, err)
	}
	msg := "atm-agent-mcp: " + string(strategy) + " of " + agentID
	if _, err := m.git.out(ctx, lead, "update-ref", "-m", msg, ref, res.Commit, res.Old); err != nil {
		bctx := context.WithoutCancel(ctx)
		if _, rerr := m.git.out(bctx, lead, "read-tree", "-m", "-u", res.Commit, res.Old); rerr != nil {
			m.log.Error("could not put the lead's files back after its branch moved", "lead", lead, "err", rerr)
		}
		return fmt.Errorf("workspace: merge into %s: %w: %w", lead, ErrLeadMoved, err)
	}
	res.New = res.Commit
	return nil
}
