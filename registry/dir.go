package registry

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// Permissions of everything this package creates.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

// Dir is the proxy state directory of one team,
// {home}/.config/atm/agent-sessions/{team}. The zero Dir is not usable; get
// one from [TeamDir].
type Dir struct {
	root string
	team string
}

// TeamDir returns the state directory of team under home. An empty home
// means [atmclient.Home] ($ATM_HOME, else $HOME). The team name is validated
// with [atmclient.ValidateName]. TeamDir does no I/O on the directory; it is
// created when something is written into it.
func TeamDir(home, team string) (Dir, error) {
	if err := atmclient.ValidateName("team", team); err != nil {
		return Dir{}, fmt.Errorf("registry: %w", err)
	}
	if home == "" {
		h, err := atmclient.Home()
		if err != nil {
			return Dir{}, fmt.Errorf("registry: %w", err)
		}
		home = h
	}
	return Dir{
		root: filepath.Join(home, ".config", "atm", "agent-sessions", team),
		team: team,
	}, nil
}

// Path returns the directory's path.
func (d Dir) Path() string { return d.root }

// Team returns the team name.
func (d Dir) Team() string { return d.team }

// lockPath returns {team}/{identity}.lock.
func (d Dir) lockPath(identity string) string {
	return filepath.Join(d.root, identity+".lock")
}

// instanceDir returns {team}/{identity}.
func (d Dir) instanceDir(identity string) string {
	return filepath.Join(d.root, identity)
}

// registryPath returns {team}/{identity}/registry.json.
func (d Dir) registryPath(identity string) string {
	return filepath.Join(d.root, identity, registryFile)
}

// summaryDir returns {team}/{identity}/{backendID}.
func (d Dir) summaryDir(identity, backendID string) string {
	return filepath.Join(d.root, identity, backendID)
}

// auditPath returns {team}/audit.jsonl.
func (d Dir) auditPath() string { return filepath.Join(d.root, auditFile) }

// validIdentity validates an identity used as a path component.
func validIdentity(identity string) error {
	if err := atmclient.ValidateName("identity", identity); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// validBackendID validates a Codex thread id used as a directory name.
func validBackendID(id string) error {
	if err := atmclient.ValidateName("backend id", id); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if err := portableName("backend id", id); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// ValidateAgentID reports whether id can be used as an agent_id: a valid
// atmclient name that is also a safe file name on Linux, macOS and Windows
// (none of <>:"|?*, no trailing dot, not a reserved device name such as
// NUL or COM1). The error wraps
// [atmclient.ErrInvalidName].
func ValidateAgentID(id string) error {
	if err := atmclient.ValidateName("agent id", id); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if err := portableName("agent id", id); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// portableName rejects names Windows cannot store as a file name.
func portableName(kind, name string) error {
	if i := strings.IndexAny(name, `<>:"|?*`); i >= 0 {
		return fmt.Errorf("%w: %s %q contains %q, which is not portable in file names", atmclient.ErrInvalidName, kind, name, name[i])
	}
	if strings.HasSuffix(name, ".") {
		return fmt.Errorf("%w: %s %q ends with a dot, which is not portable in file names", atmclient.ErrInvalidName, kind, name)
	}
	stem, _, _ := strings.Cut(name, ".")
	if windowsDevices[strings.ToUpper(stem)] {
		return fmt.Errorf("%w: %s %q is a reserved device name on Windows", atmclient.ErrInvalidName, kind, name)
	}
	return nil
}

// windowsDevices are the names Windows reserves in every directory, with or
// without an extension.
var windowsDevices = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true,
	"COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
}
