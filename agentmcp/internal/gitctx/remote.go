package gitctx

import (
	"context"
	"strings"
)

// Runner runs a program in a directory of another machine, to its end,
// and returns its stdout (sshhost.Host.Run does, over ssh).
type Runner interface {
	Run(ctx context.Context, dir string, argv []string) ([]byte, error)
}

// remoteScript prints a directory's facts as git there sees them, three
// lines: the work tree's root, the branch (detached@<7 hex> on a detached
// HEAD, empty on no commit and no branch) and remote.origin.url (empty
// when unset); nothing outside a work tree.
const remoteScript = `root=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0
printf '%s\n' "$root"
if b=$(git symbolic-ref -q --short HEAD); then printf '%s\n' "$b"
elif h=$(git rev-parse -q --verify HEAD); then printf 'detached@%.7s\n' "$h"
else echo; fi
git config --get remote.origin.url || echo`

// Remote returns the git facts of dir on the machine r runs commands on,
// from that machine's own git (one command, `sh -c`): a repository there
// is not a file here. They are named as Watcher names this machine's
// (the name from the origin's url, else the root's base name; the
// branch, or detached@<7 hex>). When the command fails (the machine is
// unreachable, git is not there) it returns the error and no facts: the
// caller keeps what it knew.
func Remote(ctx context.Context, r Runner, dir string) (Facts, error) {
	out, err := r.Run(ctx, dir, []string{"sh", "-c", remoteScript})
	if err != nil {
		return Facts{}, err
	}
	return parseRemote(string(out)), nil
}

// parseRemote reads remoteScript's output.
func parseRemote(out string) Facts {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) == "" {
		return Facts{}
	}
	for len(lines) < 3 {
		lines = append(lines, "")
	}
	root := lines[0]
	name := repoName(root, strings.TrimSpace(lines[2]))
	f := Facts{Root: &root, Name: &name}
	if b := strings.TrimSpace(lines[1]); b != "" {
		f.Branch = &b
	}
	return f
}
