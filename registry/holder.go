package registry

import (
	"time"
)

// Holder is who holds an identity's claim, as {team}/{identity}.holder
// says: diagnostics only (see the package's design notes).
type Holder struct {
	PID     int
	AgentID string // "" for a proxy instance's own claim
	Since   time.Time
}

// Holder returns who holds identity's claim as its holder file says, and
// false when there is none: the identity is free (a claim removes the file
// when it is released), or its holder has not written it yet. A holder
// that died without releasing leaves its file behind; whether its PID
// still runs is for the caller to check. Holder takes no lock and writes
// nothing.
func (d Dir) Holder(identity string) (Holder, bool) {
	if validIdentity(identity) != nil {
		return Holder{}, false
	}
	path := d.lockPath(identity)
	info := readHolder(path[:len(path)-len(".lock")] + ".holder")
	if info.PID == 0 {
		return Holder{}, false
	}
	return Holder(info), true
}
