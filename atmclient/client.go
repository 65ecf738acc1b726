package atmclient

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
)

// Errors returned by this package wrap one of these sentinels (or
// ErrInvalidName); test for them with errors.Is.
var (
	// ErrInvalidText: message text or summary that the atm CLI would reject.
	ErrInvalidText = errors.New("invalid message text")
	// ErrInvalidAddress: a recipient that is not "agent" or "agent@team".
	ErrInvalidAddress = errors.New("invalid address")
	// ErrTeamNotFound: the team directory or its config.json does not exist.
	ErrTeamNotFound = errors.New("team not found")
	// ErrNotMember: the recipient is not a member of the target team.
	ErrNotMember = errors.New("not a team member")
	// ErrCorruptInbox: the inbox file is not a JSON array; it is left as is.
	ErrCorruptInbox = errors.New("corrupt inbox file")
	// ErrLockTimeout: another writer held an inbox or team config lock
	// (flock or lock directory) for the whole Config.LockTimeout.
	ErrLockTimeout = fsx.ErrLockTimeout
)

// DefaultLockTimeout is how long a write waits for its locks (both, see
// the package documentation) before it gives up: the sum of the atm CLI's
// backoff steps (50+100+200+400+800 ms).
const DefaultLockTimeout = 1550 * time.Millisecond

// Config configures a Client. The zero value is ready to use.
type Config struct {
	// Home is the ATM home directory, the one holding .claude/teams.
	// Optional: "" means Home() ($ATM_HOME, else the user's home).
	Home string
	// Logger receives warnings (merged or unmergeable concurrent writes) and
	// debug records. Optional: nil discards.
	Logger *slog.Logger
	// Now is the clock for message timestamps. Optional: nil means time.Now.
	Now func() time.Time
	// LockTimeout bounds the wait for the locks of one write (the atm
	// CLI's flock and then Claude Code's lock directory, together).
	// Optional: 0 means DefaultLockTimeout.
	LockTimeout time.Duration
}

// Client reads and writes the inboxes under one ATM home. A Client is safe
// for concurrent use, and any number of Clients and other processes (the atm
// CLI, Claude Code) may use the same inboxes at once.
type Client struct {
	home        string
	log         *slog.Logger
	now         func() time.Time
	lockTimeout time.Duration
	cache       parseCache
	// flockOnly, set only by tests, skips Claude Code's lock directory to
	// show what is lost without it.
	flockOnly bool
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	home := strings.TrimSpace(cfg.Home)
	if home == "" {
		h, err := Home()
		if err != nil {
			return nil, err
		}
		home = h
	}
	c := &Client{
		home:        filepath.Clean(home),
		log:         cfg.Logger,
		now:         cfg.Now,
		lockTimeout: cfg.LockTimeout,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("component", "atmclient")
	if c.now == nil {
		c.now = time.Now
	}
	if c.lockTimeout <= 0 {
		c.lockTimeout = DefaultLockTimeout
	}
	return c, nil
}

// Home returns the ATM home directory of c.
func (c *Client) Home() string { return c.home }

// TeamDir returns {home}/.claude/teams/{team} after validating team.
func (c *Client) TeamDir(team string) (string, error) {
	if err := ValidateName("team", team); err != nil {
		return "", err
	}
	return filepath.Join(c.home, ".claude", "teams", team), nil
}

// InboxPath returns {home}/.claude/teams/{team}/inboxes/{agent}.json after
// validating both names. The file may not exist yet; it is created by the
// first message. Watchers should watch the inboxes directory: every write
// replaces the file by a rename. The directory also holds each inbox's
// sidecars: {agent}.lock (the atm CLI's flock), {agent}.json.lock (Claude
// Code's lock directory, present only while a writer holds it),
// {agent}.journal and, during a write, {agent}.tmp (see the package
// documentation).
func (c *Client) InboxPath(team, agent string) (string, error) {
	dir, err := c.TeamDir(team)
	if err != nil {
		return "", err
	}
	if err := ValidateName("agent", agent); err != nil {
		return "", err
	}
	return filepath.Join(dir, "inboxes", agent+".json"), nil
}

// teamInbox validates the names, checks that the team directory exists and
// returns the inbox path.
func (c *Client) teamInbox(team, agent string) (string, error) {
	path, err := c.InboxPath(team, agent)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(filepath.Dir(path))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: %q (no directory %s)", ErrTeamNotFound, team, dir)
	}
	return path, nil
}
