package sshhost

import (
	"cmp"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultSSH            = "ssh"
	DefaultConnectTimeout = 10 * time.Second
	DefaultKeepAlive      = 5 * time.Second
	// DefaultKeepAliveCount keep-alives unanswered in a row end the
	// connection (ServerAliveCountMax): with DefaultKeepAlive a dead
	// connection is found within 15 s.
	DefaultKeepAliveCount = 3
	DefaultMinBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultReapGrace      = 2 * time.Second
)

// Config says which host to reach and how. Name and Dest are required.
type Config struct {
	// Name is the host's name in the configuration ("box"); errors and
	// the log call the host by it. Letters, digits, '.', '_' and '-', at
	// most 32, not starting with '.' or '-'.
	Name string
	// Dest is the destination as ssh takes it: a ~/.ssh/config alias
	// ("box"), "user@host.example", "ssh://host:2222".
	Dest string
	// SSHArgs are more arguments of the master connection's ssh, before
	// the destination (["-F", "/path/to/config"], ["-J", "jump"]). They
	// come after the options this package must set (ControlMaster, the
	// control socket, BatchMode) and before its defaults (ConnectTimeout,
	// keep-alives, ExitOnForwardFailure), so an -o here wins over a
	// default. optional.
	SSHArgs []string
	// SSH is the ssh program. optional: "" means DefaultSSH on PATH.
	SSH string
	// RunDir is the local directory of the control socket; the socket's
	// path must stay short (a Unix socket's path holds at most about 100
	// bytes). optional: "" means a new private directory under the
	// system's temporary directory (under /tmp when that one's path is
	// too long for the socket), removed by Close.
	RunDir string
	// Instance is the serve instance whose agents this Host starts (Tag):
	// when set, its agents left running on the host are stopped (Reap)
	// each time the connection is made, before Up returns, and again by
	// Close. optional: "" reaps nothing by itself.
	Instance string
	// Guard is the guard command (codexchild/guard's Main) the master
	// connection's ssh and Run's are started through, as childproc
	// takes it: they then die with this process. optional: nil starts ssh
	// directly.
	Guard []string
	// ConnectTimeout is ssh's ConnectTimeout; a connection not made within
	// three times it is given up and tried again. optional: 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// KeepAlive is ssh's ServerAliveInterval (ServerAliveCountMax is
	// DefaultKeepAliveCount). optional: 0 means DefaultKeepAlive.
	KeepAlive time.Duration
	// MinBackoff and MaxBackoff bound the wait between two attempts to
	// connect; it doubles from MinBackoff after each failure and starts
	// again from it once a connection was made. optional: 0 means
	// DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// ReapGrace is how long Reap waits after SIGTERM before SIGKILL.
	// optional: 0 means DefaultReapGrace.
	ReapGrace time.Duration
	// Logger receives the connection's log and ssh's stderr. optional:
	// nil discards.
	Logger *slog.Logger
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$`)
	// tagRE is an instance's or a session's name as it becomes a file
	// name on the host.
	tagRE = regexp.MustCompile(`^[A-Za-z0-9_@][A-Za-z0-9_@.+-]{0,127}$`)
	// envNameRE is a variable's name that sh's export takes.
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (c *Config) check() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("sshhost: host name %q: want letters, digits, '.', '_' or '-', at most 32, not starting with '.' or '-'", c.Name)
	}
	if c.Dest == "" || strings.HasPrefix(c.Dest, "-") || strings.ContainsAny(c.Dest, " \t\n\x00") {
		return fmt.Errorf("sshhost: host %q: destination %q: want an ssh destination (an alias, user@host, ssh://host:port)", c.Name, c.Dest)
	}
	if c.Instance != "" && !tagRE.MatchString(c.Instance) {
		return fmt.Errorf("sshhost: host %q: instance %q: %s", c.Name, c.Instance, tagRule)
	}
	return nil
}

const tagRule = "want letters, digits, '_', '@', '.', '+' or '-', at most 128, not starting with '.', '+' or '-'"

func (c *Config) ssh() string { return cmp.Or(c.SSH, DefaultSSH) }

func (c *Config) connectTimeout() time.Duration {
	return positive(c.ConnectTimeout, DefaultConnectTimeout)
}
func (c *Config) keepAlive() time.Duration  { return positive(c.KeepAlive, DefaultKeepAlive) }
func (c *Config) minBackoff() time.Duration { return positive(c.MinBackoff, DefaultMinBackoff) }
func (c *Config) reapGrace() time.Duration  { return positive(c.ReapGrace, DefaultReapGrace) }

func (c *Config) maxBackoff() time.Duration {
	return max(positive(c.MaxBackoff, DefaultMaxBackoff), c.minBackoff())
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// positive is d, or def when d is not positive (unset).
func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// seconds renders d as ssh's whole seconds, at least 1.
func seconds(d time.Duration) string {
	return fmt.Sprint(max(int((d+time.Second-1)/time.Second), 1))
}
