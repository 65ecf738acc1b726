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
	Identity string    // instance identity (the directory name)
	Path     string    // path of its registry.json
	Sessions []Session // as on disk: statuses are not stale-marked
	Err      error     // non-nil if the file could not be read or parsed
}

// Scan reads every instance registry of the team, {team}/*/registry.json,
// for the `sessions` command. It takes no lock and writes nothing, so it
// may run beside live proxies; a registry being replaced is read whole,
// either before or after. Sessions of a proxy that died are still shown with
// the status they had. Instances come sorted by identity; one whose file
// cannot be read or parsed is returned with Err set. A team with no state
// directory has no instances.
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
		if err != nil {
			inst.Err = err
		} else if st, err := decodeFile(data); err != nil {
			inst.Err = fmt.Errorf("parse %s: %w", path, err)
		} else {
			inst.Sessions = st.sessions
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
