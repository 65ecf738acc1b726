package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
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

// holderInfo is the diagnostic content of a lock file.
type holderInfo struct {
	PID     int       `json:"pid"`
	AgentID string    `json:"agent_id,omitempty"`
	Since   time.Time `json:"since"`
}

// Claim is a held identity: an exclusive flock on {team}/{identity}.lock.
// Release it when the identity is unbound; if the process dies instead, the
// kernel releases it.
type Claim struct {
	identity string
	path     string

	mu sync.Mutex
	f  *os.File // nil once released
}

// Claim binds identity for agentID (which may be empty for a proxy instance)
// by taking the identity's lock without waiting. If another holder has it,
// Claim fails with a [*ConflictError]. The lock file is created (0600) if
// needed and never removed; pid, agentID and the current time are written
// into it for diagnostics.
func (d Dir) Claim(identity, agentID string) (*Claim, error) {
	if err := validIdentity(identity); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.root, dirPerm); err != nil {
		return nil, fmt.Errorf("claim identity %q: %w", identity, err)
	}
	path := d.lockPath(identity)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("claim identity %q: %w", identity, err)
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("claim identity %q: lock %s: %w", identity, path, err)
	}
	if !ok {
		// The holder writes its diagnostics just after taking the lock;
		// give a claim that lost a close race a moment to see them.
		info := readHolder(f)
		for wait := 2 * time.Millisecond; info.PID == 0 && wait <= 32*time.Millisecond; wait *= 2 {
			time.Sleep(wait)
			info = readHolder(f)
		}
		f.Close()
		return nil, &ConflictError{
			Identity:      identity,
			HolderPID:     info.PID,
			HolderAgentID: info.AgentID,
			Since:         info.Since,
		}
	}
	info, _ := json.Marshal(holderInfo{PID: os.Getpid(), AgentID: agentID, Since: time.Now().UTC()})
	info = append(info, '\n')
	// Rewrite in place on the locked descriptor: the lock file itself must
	// never be replaced.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(info, 0)
	}
	if err != nil {
		unlock(f)
		f.Close()
		return nil, fmt.Errorf("claim identity %q: write %s: %w", identity, path, err)
	}
	return &Claim{identity: identity, path: path, f: f}, nil
}

// readHolder reads the diagnostics of a lock held by someone else. A lock
// file that is empty or being rewritten yields zero values.
func readHolder(f *os.File) holderInfo {
	var info holderInfo
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil {
		return info
	}
	_ = json.Unmarshal(b, &info)
	return info
}

// Identity returns the claimed identity.
func (c *Claim) Identity() string { return c.identity }

// Release clears the diagnostics and unlocks. Releasing twice is a no-op.
func (c *Claim) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	f := c.f
	c.f = nil
	terr := f.Truncate(0)
	uerr := unlock(f)
	cerr := f.Close()
	if err := errors.Join(terr, uerr, cerr); err != nil {
		return fmt.Errorf("release identity %q: %w", c.identity, err)
	}
	return nil
}
