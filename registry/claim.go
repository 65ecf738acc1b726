package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// ErrIdentityConflict is wrapped by every [*ConflictError]. The proxy maps
// it to -32001 IDENTITY_CONFLICT.
var ErrIdentityConflict = errors.New("identity conflict")

// ConflictError reports an identity already claimed by a live holder: another
// process, or another claim in this one. The holder's details come from the
// diagnostics in its lock file; they are zero if the holder had not written
// them yet.
type ConflictError struct {
	Identity      string
	HolderPID     int       // 0 if unknown
	HolderAgentID string    // "" if unknown or held by a proxy instance itself
	Since         time.Time // zero if unknown
}

// Error describes the conflict.
func (e *ConflictError) Error() string {
	msg := fmt.Sprintf("claim identity %q: already claimed", e.Identity)
	if e.HolderAgentID != "" {
		msg += fmt.Sprintf(" by agent %s", e.HolderAgentID)
	}
	if e.HolderPID != 0 {
		msg += fmt.Sprintf(" in pid %d", e.HolderPID)
	}
	if !e.Since.IsZero() {
		msg += " since " + e.Since.UTC().Format(time.RFC3339)
	}
	return msg
}

// Unwrap returns [ErrIdentityConflict].
func (e *ConflictError) Unwrap() error { return ErrIdentityConflict }

// holderInfo is the diagnostic content of a claim's holder file.
type holderInfo struct {
	PID     int       `json:"pid"`
	AgentID string    `json:"agent_id,omitempty"`
	Since   time.Time `json:"since"`
}

// Claim is a held identity: an exclusive lock (github.com/gofrs/flock:
// flock(2) on Unix, LockFileEx on Windows) on {team}/{identity}.lock.
// Release it when the identity is unbound; if the process dies instead,
// the system releases it. Who holds it (pid, agent, since when) is written
// beside it, in {team}/{identity}.holder: a lock on Windows is mandatory,
// so the locked file itself could not be read by a rival claimant.
type Claim struct {
	identity string
	holder   string

	mu sync.Mutex
	fl *flock.Flock // nil once released
}

// Claim binds identity for agentID (which may be empty for a proxy instance)
// by taking the identity's lock without waiting. If another holder has it,
// Claim fails with a [*ConflictError] that names the holder. The lock file
// is created (0600) if needed and never removed.
func (d Dir) Claim(identity, agentID string) (*Claim, error) {
	if err := validIdentity(identity); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.root, dirPerm); err != nil {
		return nil, fmt.Errorf("claim identity %q: %w", identity, err)
	}
	path := d.lockPath(identity)
	holder := path[:len(path)-len(".lock")] + ".holder"
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(filePerm))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("claim identity %q: lock %s: %w", identity, path, err)
	}
	if !ok {
		// The holder writes who it is just after taking the lock; give a
		// claim that lost a close race a moment to see it.
		info := readHolder(holder)
		for wait := 2 * time.Millisecond; info.PID == 0 && wait <= 32*time.Millisecond; wait *= 2 {
			time.Sleep(wait)
			info = readHolder(holder)
		}
		return nil, &ConflictError{
			Identity:      identity,
			HolderPID:     info.PID,
			HolderAgentID: info.AgentID,
			Since:         info.Since,
		}
	}
	info, _ := json.Marshal(holderInfo{PID: os.Getpid(), AgentID: agentID, Since: time.Now().UTC()})
	if err := writeFileAtomic(holder, append(info, '\n')); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("claim identity %q: write %s: %w", identity, holder, err)
	}
	return &Claim{identity: identity, holder: holder, fl: fl}, nil
}

// readHolder reads who holds a claim; a missing or half-written holder
// file yields zero values.
func readHolder(path string) holderInfo {
	var info holderInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return info
	}
	_ = json.Unmarshal(b, &info)
	return info
}

// Identity returns the claimed identity.
func (c *Claim) Identity() string { return c.identity }

// Release removes the holder file and unlocks. Releasing twice is a no-op.
func (c *Claim) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fl == nil {
		return nil
	}
	fl := c.fl
	c.fl = nil
	rerr := os.Remove(c.holder)
	if errors.Is(rerr, fs.ErrNotExist) {
		rerr = nil
	}
	if err := errors.Join(rerr, fl.Unlock()); err != nil {
		return fmt.Errorf("release identity %q: %w", c.identity, err)
	}
	return nil
}
