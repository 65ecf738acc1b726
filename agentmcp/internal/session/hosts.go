package session

import (
	"context"
	"maps"
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
// is resolved and checked (Manager.ResolveCwdOn) and where the git facts
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

// ResolveCwdOn resolves a new session's directory on host: as ResolveCwd
// for this machine (host ""), else by the host (Host.Dir: relative to its
// root). An unknown host is INVALID_PARAMS (checkHost); a directory the
// host does not have is INVALID_PARAMS naming the host.
func (m *Manager) ResolveCwdOn(ctx context.Context, host, arg string) (string, error) {
	if host == "" {
		return m.ResolveCwd(ctx, arg)
	}
	h := m.cfg.Hosts[host]
	if h == nil {
		return "", m.cat.checkHost("", host)
	}
	dir, err := h.Dir(ctx, arg)
	if err != nil {
		return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "cwd", "cwd": arg, "host": host}, "cwd %q on host %s: %v", arg, host, err)
	}
	return dir, nil
}

// factsOn are the git facts of dir on host ("" is this machine, whose
// watcher reads its files); known, when the host cannot tell now (it is
// down), are kept.
func (m *Manager) factsOn(ctx context.Context, host, dir string, known gitctx.Facts) gitctx.Facts {
	if host == "" {
		return m.cfg.Git.Facts(ctx, dir)
	}
	h := m.cfg.Hosts[host]
	if h == nil {
		return known
	}
	f, err := h.Facts(ctx, dir)
	if err != nil {
		m.log.Debug("no git facts from the host; keeping what was known", "host", host, "dir", dir, "err", err)
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
func (m *Manager) refreshHostFacts(s *Session) {
	rec := s.Record()
	if rec.Host == "" || !rec.Status.Live() {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	f := m.factsOn(ctx, rec.Host, rec.Cwd, recordFacts(rec))
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
