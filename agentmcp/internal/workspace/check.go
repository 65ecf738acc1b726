package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
)

// CheckError is a merge check that did not pass: the lead's branch did not
// move. It matches ErrCheckFailed.
type CheckError struct {
	Result CommandResult
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("workspace: check %q failed (%s); the lead's branch did not move: %s",
		e.Result.Command, e.Result.Status(), e.Result.Tail)
}

func (e *CheckError) Is(target error) bool { return target == ErrCheckFailed }

// runCheck runs command in a temporary worktree of the lead's checkout at
// commit (detached, locked by us, recorded under refs/atm/checks/, with the
// .worktreeinclude files copied as for an agent), then removes it whatever
// happened. A check worktree left by a serve killed meanwhile is removed by
// Prune once its owner is gone.
func (m *Manager) runCheck(ctx context.Context, lead, agentID, name, commit, command string, progress func(Progress)) (CommandResult, error) {
	res := CommandResult{Command: command, ExitCode: -1}
	if err := m.fs.safeDirs(ctx, lead, ChecksDir); err != nil {
		return res, err
	}
	if err := m.ensureExcluded(ctx, lead); err != nil {
		return res, err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	rec := &record{Name: name + "-" + hex.EncodeToString(rnd[:]), AgentID: agentID, Source: lead, Base: commit, Landed: commit,
		Created: m.now().UTC()}
	rec.Path, rec.ref = filepath.Join(lead, ChecksDir, rec.Name), checkRefs+rec.Name
	if err := m.writeRecord(ctx, lead, rec); err != nil {
		return res, err
	}
	if _, err := m.git.out(ctx, lead, "worktree", "add", "--quiet", "--detach", "--lock", "--reason",
		lockReason(agentID, m.owner), rec.Path, commit); err != nil {
		_ = m.deleteRecord(context.WithoutCancel(ctx), lead, *rec)
		return res, fmt.Errorf("workspace: check worktree: %w", err)
	}
	defer m.removeCheck(context.WithoutCancel(ctx), *rec)
	if _, err := m.copyIncluded(ctx, lead, rec.Path); err != nil {
		return res, err
	}
	if progress != nil {
		progress(Progress{Phase: "check", Line: "running " + command})
	}
	env := []string{"ATM_WORKTREE=" + rec.Path, "ATM_SOURCE=" + lead, "ATM_CHECK=1"}
	res, err := m.runCommand(ctx, rec.Path, command, env, progress)
	if err != nil {
		return res, &CheckError{Result: res}
	}
	return res, nil
}

// removeCheck removes a check worktree and its record: it never holds
// anyone's work, so whatever the check left in it goes.
func (m *Manager) removeCheck(ctx context.Context, rec record) {
	if _, err := m.git.out(ctx, rec.Source, "worktree", "remove", "--force", "--force", rec.Path); err != nil {
		if w, lerr := m.worktreeAt(ctx, rec.Source, rec.Path); lerr != nil || w != nil {
			m.log.Warn("could not remove a check worktree", "path", rec.Path, "err", err)
			return
		}
	}
	if err := m.deleteRecord(ctx, rec.Source, rec); err != nil {
		m.log.Warn("could not delete a check worktree's record", "ref", rec.ref, "err", err)
	}
}
