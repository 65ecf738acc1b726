package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Host is a machine other than this one where agents run (Options.Hosts):
// how serve reaches it and what runs there. Serve connects to it when it
// runs (one supervised master connection, package sshhost) and closes it
// at shutdown, after its agents, which stops what an agent left there.
type Host struct {
	// SSH is the host's connection: its name, destination, ssh arguments,
	// the instance its agents are started as (and reaped as), the guard.
	SSH sshhost.Config
	// Root is the directory a relative cwd is under, a path there.
	// optional: "" means the home directory there.
	Root string
	// Codex makes Codex's backend there, over conn (codexchild.Config.Host,
	// app-server): again after its child died. optional: nil runs no
	// Codex there.
	Codex func(conn *sshhost.Host) (backend.Backend, error)
	// Agents make the backends of the other agent kinds there, by kind
	// (acpbackend.Config.Host). optional.
	Agents map[string]func(conn *sshhost.Host) backend.Backend
}

// hostPlace is one host as the sessions see it (session.Host): its
// backends by kind, its directories, the git facts there.
//
// Design notes: c is set once, when serve runs (connect); before that
// every backend there is unavailable. home is the home directory there,
// asked once; ws the worktrees there (hostworkspace.go), made at the
// first need. checking is true while a check of the reverse forwards
// runs (checkForwards: one at a time), checks counts them for close.
type hostPlace struct {
	name     string
	spec     Host
	log      *slog.Logger
	c        atomic.Pointer[sshhost.Host]
	backends map[string]*hostBackend // by kind

	homeMu sync.Mutex
	home   string

	wsMu sync.Mutex // held while the workspace is made (a round trip there)
	ws   *workspace.Manager

	checking atomic.Bool
	checks   sync.WaitGroup
}

var _ session.Host = (*hostPlace)(nil)

// newHostPlaces makes the hosts' places with their backends, not
// connected yet.
func newHostPlaces(hosts map[string]Host, log *slog.Logger) map[string]*hostPlace {
	out := make(map[string]*hostPlace, len(hosts))
	for name, spec := range hosts {
		p := &hostPlace{name: name, spec: spec, log: log.With("host", name), backends: map[string]*hostBackend{}}
		if spec.Codex != nil {
			p.backends[registry.DefaultKind] = &hostBackend{kind: registry.DefaultKind, p: p, log: p.log.With("agent", registry.DefaultKind)}
		}
		for kind := range spec.Agents {
			p.backends[kind] = &hostBackend{kind: kind, p: p, log: p.log.With("agent", kind)}
		}
		out[name] = p
	}
	return out
}

func (p *hostPlace) conn() *sshhost.Host { return p.c.Load() }

// firstConnect bounds how long a call waits for a host's first
// connection (serve connects to every host when it starts).
const firstConnect = 30 * time.Second

// ready returns nil once the host's connection is up: at once when it is
// (or is down: its error), or after the first attempt to connect, which
// a call made right after serve started waits for (firstConnect at
// most).
func (p *hostPlace) ready(ctx context.Context) error {
	conn := p.conn()
	if conn == nil {
		return errors.New("serve has not connected to the host yet")
	}
	if up, _, last := conn.State(); up || last != nil {
		return conn.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, firstConnect)
	defer cancel()
	return conn.Attempt(ctx)
}

// connecting reports whether the host's first connection is still being
// made (no attempt has ended yet).
func (p *hostPlace) connecting() bool {
	conn := p.conn()
	if conn == nil {
		return false
	}
	up, _, last := conn.State()
	return !up && last == nil
}

// connect starts the host's connection and makes its backends over it.
func (p *hostPlace) connect() error {
	conn, err := sshhost.New(p.spec.SSH)
	if err != nil {
		return err
	}
	for kind, b := range p.backends {
		var mk func() (backend.Backend, error)
		var first backend.Backend
		if kind == registry.DefaultKind {
			mk = func() (backend.Backend, error) { return p.spec.Codex(conn) }
			if first, err = mk(); err != nil {
				p.log.Warn("no Codex on the host yet", "err", err) // made again at the first turn
			}
		} else {
			first = p.spec.Agents[kind](conn)
		}
		b.mu.Lock()
		b.make, b.cur = mk, first
		b.mu.Unlock()
	}
	p.c.Store(conn) // the backends are there before the host is seen connected
	return nil
}

// Backend returns the backend of kind there (session.Host).
func (p *hostPlace) Backend(kind string) session.Backend {
	if b := p.backends[kind]; b != nil {
		return b
	}
	return nil
}

// Dir resolves dir there: absolute, or relative to the root (the home
// directory there without one); it must be a directory there.
func (p *hostPlace) Dir(ctx context.Context, dir string) (string, error) {
	if err := p.ready(ctx); err != nil {
		return "", err
	}
	conn := p.conn()
	if !path.IsAbs(dir) {
		root, err := p.root(ctx, conn)
		if err != nil {
			return "", err
		}
		dir = path.Join(root, dir)
	}
	dir = path.Clean(dir)
	if _, err := conn.Run(ctx, dir, []string{"true"}); err != nil {
		if errors.Is(err, sshhost.ErrNoDir) {
			return "", fmt.Errorf("%s is not an existing directory there", dir)
		}
		return "", err
	}
	return dir, nil
}

// root is the root of the host's directories: Host.Root, else the home
// directory there (asked once).
func (p *hostPlace) root(ctx context.Context, conn *sshhost.Host) (string, error) {
	if p.spec.Root != "" {
		return p.spec.Root, nil
	}
	p.homeMu.Lock()
	defer p.homeMu.Unlock()
	if p.home != "" {
		return p.home, nil
	}
	out, err := conn.Run(ctx, "", []string{"pwd"})
	if err != nil {
		return "", err
	}
	home := strings.TrimSpace(string(out))
	if !path.IsAbs(home) {
		return "", fmt.Errorf("the home directory there is %q, not an absolute path", home)
	}
	p.home = home
	return home, nil
}

// Facts are the git facts of dir there, from git there.
func (p *hostPlace) Facts(ctx context.Context, dir string) (gitctx.Facts, error) {
	if err := p.ready(ctx); err != nil {
		return gitctx.Facts{}, err
	}
	return gitctx.Remote(ctx, p.conn(), dir)
}

// forwardCheckTimeout bounds a check of a host's reverse forwards.
const forwardCheckTimeout = 30 * time.Second

// checkForwards makes again, in the background, the host's reverse
// forwards (the team-mail tools' port there) that are gone from the host
// while its connection is up (sshhost.CheckForwards): after each turn
// there, so that a forward cancelled or dropped on the host fails only
// the turn whose tool call met it, and is back for the next. One check
// runs at a time; a turn that ends while one runs adds none.
func (p *hostPlace) checkForwards() {
	conn := p.conn()
	if conn == nil || conn.Err() != nil || !p.checking.CompareAndSwap(false, true) {
		return
	}
	p.checks.Go(func() {
		defer p.checking.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), forwardCheckTimeout)
		defer cancel()
		remade, err := conn.CheckForwards(ctx)
		if len(remade) > 0 {
			p.log.Warn("the team-mail tools' reverse forward was gone from the host: made again", "remote_ports", remade)
		}
		if err != nil && conn.Err() == nil {
			p.log.Warn("could not make the reverse forward to the host again", "err", err)
		}
	})
}

// hostSet is serve's hosts: connected at Run, followed (watch), closed at
// shutdown. A nil *hostSet has none.
type hostSet struct {
	places   map[string]*hostPlace
	stale    func(tag string) bool // Options.StaleInstance, or nil
	log      *slog.Logger
	stop     context.CancelFunc
	watching sync.WaitGroup
}

// workspaces are the hosts' worktrees as package places takes them (each
// made at its first use).
func (hs *hostSet) workspaces() map[string]func(context.Context) (*workspace.Manager, error) {
	if hs == nil || len(hs.places) == 0 {
		return nil
	}
	out := make(map[string]func(context.Context) (*workspace.Manager, error), len(hs.places))
	for name, p := range hs.places {
		out[name] = p.workspace
	}
	return out
}

// sessionHosts are the hosts as the session manager takes them.
func (hs *hostSet) sessionHosts() map[string]session.Host {
	if len(hs.places) == 0 {
		return nil
	}
	out := make(map[string]session.Host, len(hs.places))
	for name, p := range hs.places {
		out[name] = p
	}
	return out
}

// start connects to every host and follows each: back is called each
// time a host's connection is up again after it was down, with the
// host's backends that got a new child (see hostBackend.reconnected).
func (hs *hostSet) start(back func(name string, replaced []*hostBackend)) {
	if hs == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	hs.stop = stop
	for _, name := range slices.Sorted(maps.Keys(hs.places)) {
		p := hs.places[name]
		if err := p.connect(); err != nil {
			hs.log.Error("no connection to the host: its agents cannot run", "host", name, "err", err)
			continue
		}
		hs.watching.Go(func() { hs.watch(ctx, p, back) })
	}
}

// watch follows a host's connection until ctx ends.
func (hs *hostSet) watch(ctx context.Context, p *hostPlace, back func(string, []*hostBackend)) {
	conn := p.conn()
	wasUp, dropped := false, false
	for {
		up, changed, last := conn.State()
		switch {
		case up && !wasUp:
			hs.reapStale(ctx, p)
			var replaced []*hostBackend
			if dropped {
				for _, kind := range slices.Sorted(maps.Keys(p.backends)) {
					if b := p.backends[kind]; b.reconnected() {
						replaced = append(replaced, b)
					}
				}
				p.log.Info("the host is back: its sessions continue", "new_children", len(replaced))
			}
			back(p.name, replaced)
		case !up && wasUp:
			dropped = true
			p.log.Warn("the host's connection was lost: its turns fail, its mail waits; reconnecting", "err", last)
		}
		wasUp = up
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// reapStale stops on p's host the agents that serves which are gone left
// there (Options.StaleInstance).
func (hs *hostSet) reapStale(ctx context.Context, p *hostPlace) {
	if hs.stale == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn := p.conn()
	tags, err := conn.Instances(ctx)
	if err != nil {
		p.log.Warn("could not list the instances with agents on the host", "err", err)
		return
	}
	for _, tag := range tags {
		if !hs.stale(tag) {
			continue
		}
		stopped, err := conn.Reap(ctx, tag)
		switch {
		case err != nil:
			p.log.Warn("could not stop the agents a gone serve left on the host", "instance", tag, "err", err)
		case len(stopped) > 0:
			p.log.Warn("stopped the agents a gone serve left on the host", "instance", tag, "sessions", stopped)
		}
	}
}

// closeBackends stops the agents of every host, within ctx.
func (hs *hostSet) closeBackends(ctx context.Context) {
	if hs == nil {
		return
	}
	var wg sync.WaitGroup
	for _, p := range hs.places {
		for kind, b := range p.backends {
			wg.Go(func() {
				if err := b.Close(ctx); err != nil {
					hs.log.Warn("stopping an agent kind's backend on a host", "host", p.name, "agent", kind, "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// close ends the watches and every host's connection: what this serve's
// agents left there is stopped first (sshhost's reap of its instance).
func (hs *hostSet) close(ctx context.Context) {
	if hs == nil {
		return
	}
	if hs.stop != nil {
		hs.stop()
	}
	hs.watching.Wait()
	var wg sync.WaitGroup
	for _, p := range hs.places {
		p.checks.Wait()
		if conn := p.conn(); conn != nil {
			wg.Go(func() {
				if err := conn.Close(ctx); err != nil {
					hs.log.Warn("closing the connection to a host", "host", p.name, "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// lastLines is the last few non-empty lines of s, joined with " | ".
func lastLines(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// hostBack is told that a host's connection is up (again): the sessions
// of a backend that got a new child continue on it (AfterRestart: the
// audit, and the seed of a thread that cannot be resumed), and the mail
// that waited for the host is delivered.
func (s *Server) hostBack(name string, replaced []*hostBackend) {
	for _, b := range replaced {
		n := s.sessions.AfterRestart(b)
		s.log.Info("the sessions on the host continue on its new child", "host", name, "agent", b.kind, "sessions", n)
	}
	s.resumeMail()
}

// statuses are the hosts' connections as agent_status shows them; nil
// without hosts.
func (hs *hostSet) statuses() map[string]tools.HostStatus {
	if hs == nil || len(hs.places) == 0 {
		return nil
	}
	out := make(map[string]tools.HostStatus, len(hs.places))
	for name, p := range hs.places {
		st := tools.HostStatus{Error: "serve has not connected to it yet"}
		if conn := p.conn(); conn != nil {
			st.Error = ""
			if err := conn.Err(); err != nil {
				st.Error = err.Error()
			} else {
				st.Up = true
			}
		}
		out[name] = st
	}
	return out
}
