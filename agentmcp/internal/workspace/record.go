package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Records: what we made, kept by git itself. Each worktree we create has
// a record, a JSON blob that the ref refs/atm/worktrees/<name> points at
// (refs/atm/checks/<name> for the temporary worktrees of merge checks). A
// ref is created with `update-ref <ref> <new> ""`, which fails when it
// exists, so two serves can never take one name; it is updated and deleted
// with its old value (compare-and-swap). Refs outside refs/heads and
// refs/tags are neither cloned nor shown by `git log --all`, and an agent's
// sandbox never makes refs/atm writable (see WritableRoots): an agent
// cannot forge or erase a record. A record outlives an unlock and a `git
// worktree prune`, which is how a worktree whose directory was deleted is
// still reported.

const (
	recordRefs = "refs/atm/worktrees/"
	checkRefs  = "refs/atm/checks/"
)

// record is what we know of a worktree we made.
type record struct {
	Version  int    `json:"version"`
	Name     string `json:"name"`
	AgentID  string `json:"agent_id"`
	Identity string `json:"identity,omitempty"`
	Team     string `json:"team,omitempty"`
	// Branch is the worktree's branch, short ("atm/alice"); "" for a check.
	Branch string `json:"branch,omitempty"`
	// Path is the worktree's root.
	Path string `json:"path"`
	// Source is the checkout it was made from: the lead's, where merges go.
	Source string `json:"source"`
	// Base is the commit the agent's own work starts from: the commit it was
	// made at, and after each merge into the lead's branch the agent's
	// commit that was merged.
	Base string `json:"base"`
	// BaseRef is what the base was asked as ("HEAD", "main").
	BaseRef string `json:"base_ref,omitempty"`
	// Landed is the lead-side commit that holds everything up to Base: Base
	// itself at first, the lead's new commit after a merge.
	Landed  string    `json:"landed"`
	Created time.Time `json:"created"`

	ref string // the record's ref
	oid string // the blob the ref points at (for compare-and-swap)
}

const recordVersion = 1

// readRecords returns the records under prefix (recordRefs or checkRefs)
// of the repository that holds dir.
func (m *Manager) readRecords(ctx context.Context, dir, prefix string) ([]record, error) {
	refs, err := m.git.lines(ctx, dir, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	if err != nil {
		return nil, fmt.Errorf("workspace: list records: %w", err)
	}
	if len(refs) == 0 {
		return nil, nil
	}
	var in bytes.Buffer
	type ref struct{ name, oid string }
	rs := make([]ref, 0, len(refs))
	for _, l := range refs {
		name, oid, _ := strings.Cut(l, " ")
		rs = append(rs, ref{name, oid})
		in.WriteString(oid + "\n")
	}
	out, err := m.git.run(ctx, dir, gitOpts{stdin: &in}, "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("workspace: read records: %w", err)
	}
	blobs, err := parseBatch(out, len(rs))
	if err != nil {
		return nil, err
	}
	recs := make([]record, 0, len(rs))
	for i, r := range rs {
		var rec record
		if err := json.Unmarshal(blobs[i], &rec); err != nil || rec.Version != recordVersion {
			m.log.Warn("skipping an unreadable worktree record", "ref", r.name, "err", err)
			continue
		}
		rec.ref, rec.oid = r.name, r.oid
		recs = append(recs, rec)
	}
	return recs, nil
}

// parseBatch splits `git cat-file --batch` output into n contents.
func parseBatch(out []byte, n int) ([][]byte, error) {
	res := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			return nil, errors.New("workspace: short cat-file --batch output")
		}
		f := strings.Fields(string(out[:nl]))
		if len(f) != 3 {
			return nil, fmt.Errorf("workspace: cat-file --batch: %q", out[:nl])
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || nl+1+size > len(out) {
			return nil, fmt.Errorf("workspace: cat-file --batch: bad size in %q", out[:nl])
		}
		res = append(res, out[nl+1:nl+1+size])
		out = out[min(len(out), nl+1+size+1):]
	}
	return res, nil
}

// writeRecord stores rec under its ref: created when rec.oid is "" (and
// failing if the ref exists), else replaced if it still points at rec.oid.
// It sets rec.oid to the new blob.
func (m *Manager) writeRecord(ctx context.Context, dir string, rec *record) error {
	rec.Version = recordVersion
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	oid, err := m.git.run(ctx, dir, gitOpts{stdin: bytes.NewReader(b)}, "hash-object", "-w", "--stdin")
	if err != nil {
		return fmt.Errorf("workspace: store record: %w", err)
	}
	newOID := strings.TrimSpace(string(oid))
	if _, err := m.git.out(ctx, dir, "update-ref", "-m", "atm-agent-mcp: record", rec.ref, newOID, rec.oid); err != nil {
		return fmt.Errorf("workspace: record %s: %w", rec.ref, err)
	}
	rec.oid = newOID
	return nil
}

// deleteRecord deletes rec's ref if it still points at rec.oid.
func (m *Manager) deleteRecord(ctx context.Context, dir string, rec record) error {
	if _, err := m.git.out(ctx, dir, "update-ref", "-m", "atm-agent-mcp: forget", "-d", rec.ref, rec.oid); err != nil {
		return fmt.Errorf("workspace: delete record %s: %w", rec.ref, err)
	}
	return nil
}

// refExists reports whether ref names an object.
func (m *Manager) refExists(ctx context.Context, dir, ref string) (bool, error) {
	_, err := m.git.run(ctx, dir, gitOpts{}, "rev-parse", "--verify", "--quiet", ref)
	if err == nil {
		return true, nil
	}
	if c, ok := exitCode(err); ok && c == 1 {
		return false, nil
	}
	return false, err
}

// recordOfPlace reads the record of p's worktree by its name (one git
// command; without the blob id, so not for an update).
func (m *Manager) recordOfPlace(ctx context.Context, p *Place) (*record, error) {
	b, err := m.git.run(ctx, p.Path, gitOpts{}, "cat-file", "blob", recordRefs+p.Name)
	if err != nil {
		if _, ok := exitCode(err); ok {
			return nil, fmt.Errorf("workspace: %s: %w", p.Path, ErrNotFound)
		}
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil || rec.AgentID != p.AgentID || rec.Path != p.Path {
		return nil, fmt.Errorf("workspace: %s: the record %s is not this worktree's: %w", p.Path, recordRefs+p.Name, ErrNotFound)
	}
	rec.ref = recordRefs + p.Name
	return &rec, nil
}
