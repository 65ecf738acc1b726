package registry

// Owner returns who holds identity's claim as its holder file says (zero
// when there is no holder file), and whether that process still runs and
// holds the claim. It is how a reader tells a live proxy instance from one
// that died without releasing its claims (SIGKILL, a crash), whose holder
// file stays behind: the process must exist and not be a zombie, and
// where the system shows a process's open files (Linux: /proc/{pid}/fd)
// it must have the claim's lock file open, so that a reused pid is not
// taken for the holder. Owner takes no lock and writes nothing; it never
// takes the claim, so it cannot make a claimant fail.
func (d Dir) Owner(identity string) (h Holder, running bool) {
	h, ok := d.Holder(identity)
	if !ok {
		return Holder{}, false
	}
	return h, holds(h.PID, d.lockPath(identity))
}
