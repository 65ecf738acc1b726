package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// Instance is one proxy instance's registry as read by [Dir.Scan].
type Instance struct {
	Identity string // instance identity (the directory name)
	Path     string // path of its registry.json
	// Sessions are as on disk, except that when the instance's proxy does
	// not run (Running false) its live sessions read stale, with thread
	// state closed, as its next Open would mark them.
	Sessions []Session
	Err      error // non-nil if the file could not be read or parsed
	// Owner is who holds the instance's claim as its holder file says:
	// the proxy's pid and since when; zero when nobody claimed it or the
	// claim was released.
	Owner Holder
	// Running reports whether Owner still runs and holds the claim (see
	// [Dir.Owner]): a proxy that was killed or crashed has left its holder
	// file behind, and is not running.
	Running bool
}

// Scan reads every instance registry of the team, {team}/*/registry.json,
// for the `sessions` command. It takes no lock and writes nothing, so it
// may run beside live proxies; a registry being replaced is read whole,
// either before or after. Whether each instance's proxy runs is read from
// its claim ([Dir.Owner]); the live sessions of one that does not run
// (killed, crashed, or ended without closing them) read stale at once,
// without waiting for the next Open of that instance. Instances come
// sorted by identity; one whose file cannot be read or parsed is returned
// with Err set. A team with no state directory has no instances.
func (d Dir) Scan() ([]Instance, error) {
	entries, err := os.ReadDir(d.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scan registries: %w", err)
	}
	var out []Instance
	for _, e := range entries {
		if !e.IsDir() || validIdentity(e.Name()) != nil {
			continue
		}
		path := d.registryPath(e.Name())
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a summary-only directory
		}
		inst := Instance{Identity: e.Name(), Path: path}
		inst.Owner, inst.Running = d.Owner(e.Name())
		if err != nil {
			inst.Err = err
		} else if st, err := decodeFile(data); err != nil {
			inst.Err = fmt.Errorf("parse %s: %w", path, err)
		} else {
			inst.Sessions = st.sessions
			if !inst.Running {
				markStale(inst.Sessions)
			}
		}
		out = append(out, inst)
	}
	slices.SortFunc(out, func(a, b Instance) int {
		if a.Identity < b.Identity {
			return -1
		}
		if a.Identity > b.Identity {
			return 1
		}
		return 0
	})
	return out, nil
}

// markStale marks the live sessions of a proxy that has ended stale, with
// their thread closed, as Open does for the previous process's.
func markStale(sessions []Session) {
	for i := range sessions {
		if sessions[i].Status.Live() {
			sessions[i].Status = StatusStale
			sessions[i].ThreadState = ThreadClosed
		}
	}
}
