package session

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Hosts. A session may run its agent on another machine, a host
// (CreateRequest.Host, recorded in registry.Session.Host): the
// composition root reaches each host (package proxy, over ssh) and gives
// it here as a Host (Config.Hosts, by name). This package knows a host by
// its name only: it is where a session's backend is looked up besides its
// kind (Catalogue.of: the kind's entry of the host), where its directory
// is resolved and checked (Catalogue.ResolveCwd) and where the git facts
// of its context come from (the host's Facts, not this machine's files);
// the context block names it. Neither kind nor host is branched on: a
// backend is picked by the pair (kind, host) the record holds, so a
// session adopted after a restart runs on the same host again, and a host
// down is the availability of that backend (backend.Availability,
// MailPauser), asked as for any kind.

// Host is a machine other than this one where sessions' agents run,
// reached by the composition root. Its methods are safe for concurrent
// use.
type Host interface {
	// Backend returns the backend of agent kind there ("" is the default
	// kind), nil when the kind cannot run there.
	Backend(kind string) Backend
	// Dir resolves a session's directory there: dir absolute there, or
	// relative to the host's root ("" is the root itself); it must be an
	// existing directory there. Its error says why not (the host down,
	// no such directory) and names the host.
	Dir(ctx context.Context, dir string) (string, error)
	// Facts are the git facts of dir there; an error when the host cannot
	// tell now (the caller keeps what it knew).
	Facts(ctx context.Context, dir string) (gitctx.Facts, error)
}

// Hosts returns the names of the hosts sessions can run on, sorted.
func (c *Catalogue) Hosts() []string { return slices.Sorted(maps.Keys(c.cfg.Hosts)) }

// backendAt returns the backend of kind on host ("" is this machine), or
// nil when there is none.
func (c *Catalogue) backendAt(kind, host string) Backend {
	if host == "" {
		return c.backend(kind)
	}
	h := c.cfg.Hosts[host]
	if h == nil {
		return nil
	}
	return h.Backend(c.kind(kind))
}

// checkHost checks the host a new session of kind asks for: one of
// Config.Hosts, where the kind runs, else INVALID_PARAMS (-32602) naming
// the host, the hosts there are and how to configure one. Isolation is
// the places' on the host (PlaceRequest.Host).
func (c *Catalogue) checkHost(kind, host string) error {
	if host == "" {
		return nil
	}
	hosts := c.Hosts()
	if c.cfg.Hosts[host] == nil {
		list := "none are configured"
		if len(hosts) > 0 {
			list = "hosts: " + strings.Join(hosts, ", ")
		}
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "host", "host": host, "hosts": hosts},
			"host %q is not configured (%s); add [plugins.atm-agent-mcp.hosts.%s] with ssh = \"<destination>\" and restart serve, or leave host out to run here", host, list, host)
	}
	if c.backendAt(kind, host) == nil {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "host", "host": host, "agent": c.kind(kind)},
			"agent %q cannot run on host %q; leave host out to run it here", c.kind(kind), host)
	}
	return nil
}

// ResolveCwd resolves a new session's directory on host. On this machine
// (host "") it applies FR-2.4: the caller's cwd (relative to the proxy's
// directory), else the repository root of the proxy's directory, else the
// proxy's directory; a given cwd must be an existing directory. On a host
// the host resolves it (Host.Dir: relative to its root). An unknown host
// is INVALID_PARAMS (checkHost); a directory the host does not have is
// INVALID_PARAMS naming the host.
func (c *Catalogue) ResolveCwd(ctx context.Context, host, arg string) (string, error) {
	if host != "" {
		return c.resolveCwdOn(ctx, host, arg)
	}
	if arg == "" {
		if f := c.cfg.Git.Facts(ctx, c.cfg.Cwd); f.Root != nil {
			return *f.Root, nil
		}
		return c.cfg.Cwd, nil
	}
	p := arg
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.cfg.Cwd, p)
	}
	p = filepath.Clean(p)
	st, err := os.Stat(p)
	if err != nil || !st.IsDir() {
		return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "cwd", "cwd": arg}, "cwd %q is not an existing directory", arg)
	}
	return p, nil
}

// resolveCwdOn is ResolveCwd on a host.
func (c *Catalogue) resolveCwdOn(ctx context.Context, host, arg string) (string, error) {
	h := c.cfg.Hosts[host]
	if h == nil {
		return "", c.checkHost("", host)
	}
	dir, err := h.Dir(ctx, arg)
	if err != nil {
		return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "cwd", "cwd": arg, "host": host}, "cwd %q on host %s: %v", arg, host, err)
	}
	return dir, nil
}

// facts are the git facts of dir on host ("" is this machine, whose
// watcher reads its files); known, when the host cannot tell now (it is
// down), are kept.
func (c *Catalogue) facts(ctx context.Context, host, dir string, known gitctx.Facts) gitctx.Facts {
	if host == "" {
		return c.cfg.Git.Facts(ctx, dir)
	}
	h := c.cfg.Hosts[host]
	if h == nil {
		return known
	}
	f, err := h.Facts(ctx, dir)
	if err != nil {
		c.cfg.Logger.Debug("no git facts from the host; keeping what was known", "host", host, "dir", dir, "err", err)
		return known
	}
	return f
}

// refreshHostFacts reads again the git facts of s, a session on a host,
// once its turn has ended, into its record: a turn on a host takes them
// from the record, so that it pays no round trip to the host for them
// (the session's start reads them first). A turn that starts at once
// after another (queued, or mail the turn's end let in) may see the
// facts of before the other; the one after sees its changes.
func (s *Session) refreshHostFacts() {
	m := s.m
	rec := s.Record()
	if rec.Host == "" || !rec.Status.Live() {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	f := m.cat.facts(ctx, rec.Host, rec.Cwd, recordFacts(rec))
	s.mu.Lock()
	changed := deref(f.Root) != s.rec.RepoRoot || deref(f.Name) != s.rec.RepoName || deref(f.Branch) != s.rec.Branch
	if changed && s.rec.Cwd == rec.Cwd {
		s.rec.RepoRoot, s.rec.RepoName, s.rec.Branch = deref(f.Root), deref(f.Name), deref(f.Branch)
	}
	s.mu.Unlock()
	if changed {
		m.persist.async(s)
		s.changed()
	}
}

// recordFacts are the git facts a session's record holds (the last ones
// read).
func recordFacts(rec registry.Session) gitctx.Facts {
	return gitctx.Facts{Root: nullable(rec.RepoRoot), Name: nullable(rec.RepoName), Branch: nullable(rec.Branch)}
}
