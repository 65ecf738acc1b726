package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"
)

// Where and how worktrees are made (see the package doc for why).
const (
	// WorktreesDir holds the agents' worktrees, below the root of the
	// checkout they are made from.
	WorktreesDir = ".atm/worktrees"
	// ChecksDir holds the temporary worktrees of merge checks.
	ChecksDir = ".atm/checks"
	// BranchPrefix starts every agent branch: atm/<name>.
	BranchPrefix = "atm/"
)

// Errors. Each is wrapped with the details of the case; test with errors.Is.
var (
	ErrGitTooOld      = errors.New("git is too old")
	ErrNotRepository  = errors.New("not inside a git checkout")
	ErrNoCommits      = errors.New("the repository has no commit yet")
	ErrBadBase        = errors.New("the base is not a commit of the repository")
	ErrSymlink        = errors.New("the worktree location is or passes through a symbolic link")
	ErrNotFound       = errors.New("no worktree of ours for this agent")
	ErrOwned          = errors.New("the worktree is owned by a live process")
	ErrSetup          = errors.New("worktree setup failed")
	ErrLeadDirty      = errors.New("the lead's checkout has uncommitted changes")
	ErrLeadBusy       = errors.New("the lead's checkout is not on a branch at rest")
	ErrNothingToMerge = errors.New("nothing to merge")
	ErrConflict       = errors.New("merge conflict")
	ErrCheckFailed    = errors.New("merge check failed")
	ErrLeadMoved      = errors.New("the lead's branch moved meanwhile")
)

// Config configures a Manager.
type Config struct {
	// Runner runs git and the setup and check commands. optional: nil
	// means LocalRunner{}.
	Runner Runner
	// Host names the machine that Runner runs on, when it is not this one
	// (a host reached over ssh): the checkouts are there, and so every
	// file operation that is not git's runs there too, as a sh program
	// through Runner (files_sh.go); a Tracker reads whole snapshots (no
	// tree watch over ssh), and errors and logs name the host. optional:
	// "" is this machine, whose files are read directly.
	Host string
	// Logger receives the manager's logs. optional: nil discards them.
	Logger *slog.Logger
	// Owner is who takes the worktrees' locks: serve. optional: the zero
	// value means this process (Self()).
	Owner Owner
	// Ports reserves a block of ports for each worktree that asks for one.
	// optional: nil means no ports (a Request with Ports > 0 then fails).
	Ports *Ports
	// Now is the clock. optional: nil means time.Now.
	Now func() time.Time
}

// Manager makes, hands out, reviews, merges and cleans up the agents'
// worktrees. Its methods are safe for concurrent use: all shared state is
// in git (refs, locks) and in the port registry, each guarded by its own
// lock (see the package doc's lock inventory); the Manager holds none.
type Manager struct {
	git     git
	fs      files
	host    string // "" for this machine
	log     *slog.Logger
	owner   Owner
	ports   *Ports
	now     func() time.Time
	version string
}

// New returns a Manager after checking that git is there and new enough
// (MinGitVersion).
func New(ctx context.Context, cfg Config) (*Manager, error) {
	m := &Manager{log: cfg.Logger, owner: cfg.Owner, ports: cfg.Ports, now: cfg.Now, host: cfg.Host}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m.log = m.log.With("component", "workspace")
	if m.host != "" {
		m.log = m.log.With("host", m.host)
	}
	r := cfg.Runner
	if r == nil {
		r = LocalRunner{}
	}
	m.git = git{r: r, log: m.log}
	m.fs = localFiles{}
	if m.host != "" {
		m.fs = shFiles{r: r}
	}
	if m.owner == (Owner{}) {
		m.owner = Self()
	}
	if m.now == nil {
		m.now = time.Now
	}
	s, v, err := m.git.version(ctx, "/")
	if err != nil {
		return nil, fmt.Errorf("workspace: run git%s: %w", m.on(), err)
	}
	if !versionOK(v) {
		return nil, fmt.Errorf("workspace: %s%s: %w (need %d.%d or later for merge-tree --write-tree)",
			s, m.on(), ErrGitTooOld, MinGitVersion[0], MinGitVersion[1])
	}
	m.version = s
	return m, nil
}

// GitVersion is what `git version` said.
func (m *Manager) GitVersion() string { return m.version }

// Host is the host the checkouts are on (Config.Host): "" for this
// machine.
func (m *Manager) Host() string { return m.host }

// on is " on host <name>" for a Manager on a host, for messages.
func (m *Manager) on() string {
	if m.host == "" {
		return ""
	}
	return " on host " + m.host
}

// IsDir reports whether p is a directory where the checkouts are.
func (m *Manager) IsDir(ctx context.Context, p string) bool { return m.fs.isDir(ctx, p) }

// checkout is a checkout and its repository, as git sees them.
type checkout struct {
	Top    string // the checkout's root
	Common string // the repository's common git directory
	GitDir string // the checkout's own git directory
}

// checkoutOf finds the checkout that holds dir.
func (m *Manager) checkoutOf(ctx context.Context, dir string) (checkout, error) {
	l, err := m.git.lines(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--absolute-git-dir")
	if err != nil {
		var ge *GitError
		if c, ok := exitCode(err); ok && c == 128 && errors.As(err, &ge) {
			return checkout{}, fmt.Errorf("workspace: %s: %w (%s)", dir, ErrNotRepository, strings.TrimSpace(ge.Stderr))
		}
		return checkout{}, fmt.Errorf("workspace: %s: %w", dir, err)
	}
	if len(l) != 3 {
		return checkout{}, fmt.Errorf("workspace: rev-parse in %s printed %q", dir, l)
	}
	return checkout{Top: filepath.Clean(l[0]), Common: filepath.Clean(l[1]), GitDir: filepath.Clean(l[2])}, nil
}

// commitOf resolves rev to a commit id in dir.
func (m *Manager) commitOf(ctx context.Context, dir, rev string) (string, error) {
	s, err := m.git.out(ctx, dir, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", err
	}
	return s, nil
}

// isAncestor reports whether a is an ancestor of (or equal to) b.
func (m *Manager) isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := m.git.run(ctx, dir, gitOpts{}, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	if c, ok := exitCode(err); ok && c == 1 {
		return false, nil
	}
	return false, err
}
