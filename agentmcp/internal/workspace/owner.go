package workspace

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Owner is the process that owns a worktree while a session lives: serve.
// Its identity goes into the git lock's reason, so that anyone (another
// serve, `worktrees`, a later serve after a SIGKILL) can tell a live owner
// from a dead one.
type Owner struct {
	// PID is the owner's process id.
	PID int
	// Start is the process's start time as the kernel tells it (Linux: the
	// clock ticks after boot of /proc/<pid>/stat); with PID it names one
	// process even after the pid is reused. "" where it cannot be read.
	Start string
	// Host is the machine the owner runs on (os.Hostname). A lock taken on
	// another host is never judged dead from here.
	Host string
}

// Self is this process as an Owner.
func Self() Owner {
	host, _ := os.Hostname()
	return Owner{PID: os.Getpid(), Start: procStart(os.Getpid()), Host: host}
}

// lockPrefix starts the reason of every lock we take: a lock without it is
// not ours.
const lockPrefix = "atm-agent-mcp"

// lockReason is the reason given to `git worktree lock`: who holds the
// worktree, on one line of key=value words.
func lockReason(agentID string, o Owner) string {
	r := lockPrefix + " agent=" + agentID + " pid=" + strconv.Itoa(o.PID)
	if o.Start != "" {
		r += " start=" + o.Start
	}
	if o.Host != "" {
		r += " host=" + o.Host
	}
	return r
}

// lockHolder is what a lock reason says.
type lockHolder struct {
	AgentID string
	Owner   Owner
}

// parseLockReason reads a reason written by lockReason; ok is false for
// anyone else's.
func parseLockReason(reason string) (h lockHolder, ok bool) {
	f := strings.Fields(reason)
	if len(f) == 0 || f[0] != lockPrefix {
		return h, false
	}
	for _, w := range f[1:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "agent":
			h.AgentID = v
		case "pid":
			h.Owner.PID, _ = strconv.Atoi(v)
		case "start":
			h.Owner.Start = v
		case "host":
			h.Owner.Host = v
		}
	}
	return h, h.AgentID != "" && h.Owner.PID > 0
}

// alive reports whether o still runs, as seen from self: an owner on
// another host, or whose start time cannot be compared, is taken to be
// alive when its pid exists there; a pid that exists but started at another
// time is a reused pid, so the owner is gone.
func (o Owner) alive(self Owner) bool {
	if o.Host != "" && self.Host != "" && o.Host != self.Host {
		return true // not ours to judge
	}
	if o.PID <= 0 {
		return false
	}
	err := syscall.Kill(o.PID, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if o.Start == "" {
		return true
	}
	now := procStart(o.PID)
	return now == "" || now == o.Start
}

// same reports whether o and p are one process.
func (o Owner) same(p Owner) bool {
	return o.PID == p.PID && o.Host == p.Host && (o.Start == "" || p.Start == "" || o.Start == p.Start)
}
