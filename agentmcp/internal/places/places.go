package places

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// Config configures Places.
type Config struct {
	// Manager makes and keeps the worktrees on this machine. required.
	Manager *workspace.Manager
	// Hosts give the workspace manager of each host an isolated session
	// may run on, by the host's name (session.PlaceRequest.Host): asked
	// each time a place, a review or a merge there needs it (the caller
	// makes it once, over the host's connection, and keeps it). optional:
	// nil refuses isolation on a host.
	Hosts map[string]func(ctx context.Context) (*workspace.Manager, error)
	// Team is recorded with each worktree (the registry's team, which the
	// worktrees command lists by). optional.
	Team string
	// Setup is the command run in each new worktree before its first turn
	// (worktree_setup). optional: "" runs none.
	Setup string
	// Ports is how many ports each isolated session gets (worktree_ports).
	// optional: 0 gives none.
	Ports int
	// ATM sends the radar's mail. optional: nil sends none (the overlaps
	// are still listed).
	ATM *atmclient.Client
	// MailTeam is the ATM team the radar's mail goes to. required with ATM.
	MailTeam string
	// Lead is the identity that gets a copy of each overlap (the client's
	// own), and the sender of the radar's mail. required with ATM.
	Lead string
	// Audit records the radar's mail as atm_send does. optional.
	Audit *session.Auditor
	// LookTimeout bounds one look of the radar at an ended turn. optional:
	// 0 means 5s.
	LookTimeout time.Duration
	// Logger receives the logs. optional: nil discards them.
	Logger *slog.Logger
}

// Places is session.Places over workspace, with the conflict radar. Its
// methods are safe for concurrent use.
type Places struct {
	cfg         Config
	lookTimeout time.Duration
	m           *workspace.Manager
	log         *slog.Logger
	radar       *workspace.Radar // this machine's (shared with the other serves of a repository)

	mu         sync.Mutex                    // guards the fields below; a leaf
	hostRadars map[string]*workspace.Radar   // each host's, shared there, by the host's name
	live       map[string]agentInfo          // the live places, by agent_id
	trackers   map[string]*workspace.Tracker // the live places' changes, by agent_id
	pending    map[string]pendingTurn        // the radar's queue, by agent_id
	closed     bool                          // Close was called: nothing is queued any more

	wake   chan struct{} // 1-buffered: the queue has work
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the radar's goroutine has ended (or was never started)
	start  sync.Once
}

// agentInfo is what the radar says of an agent.
type agentInfo struct {
	identity, branch, path string
	host                   string // "" for this machine
	// repo is the repository's common git directory, source the checkout
	// the worktree was made from (the lead's).
	repo, source string
}

// pendingTurn is a worktree for the radar to look at; quiet ones (a
// resume's first look) are compared without mail.
type pendingTurn struct {
	p     *session.Place
	quiet bool
}

var _ session.Places = (*Places)(nil)

// New returns Places over cfg.Manager; Start starts its radar.
func New(cfg Config) *Places {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lt := cfg.LookTimeout
	if lt <= 0 {
		lt = lookTimeout
	}
	return &Places{cfg: cfg, lookTimeout: lt, m: cfg.Manager, log: log.With("component", "places"), radar: workspace.NewSharedRadar(workspace.Owner{}),
		hostRadars: map[string]*workspace.Radar{},
		live:       map[string]agentInfo{}, trackers: map[string]*workspace.Tracker{}, pending: map[string]pendingTurn{}, wake: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Manager is the workspace manager the places on this machine are made
// by (the worktrees command).
func (ps *Places) Manager() *workspace.Manager { return ps.m }

// managerOf is the workspace manager of host ("" for this machine): the
// client's error when there is none, or the host's cannot be had now.
func (ps *Places) managerOf(ctx context.Context, host string) (*workspace.Manager, error) {
	if host == "" {
		return ps.m, nil
	}
	mk := ps.cfg.Hosts[host]
	if mk == nil {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "isolation", "host": host},
			"isolation \"worktree\" is not available on host %q in this serve: start the agent there with isolation \"none\"", host)
	}
	m, err := mk(ctx)
	if err != nil {
		return nil, proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, map[string]any{"host": host},
			"the worktrees on host %s cannot be reached now: %v", host, err)
	}
	return m, nil
}

// radarOf is the radar of host's repositories, shared with every other
// serve through their git directories: this machine's (radarstore), and
// a host's there, through the host's workspace manager (its lock and
// files there: workspace.NewSharedRadarOn). Until the host's manager can
// be had (its connection down since serve started: no look there can
// run either), the radar of that call is one in memory, not kept.
func (ps *Places) radarOf(host string) *workspace.Radar {
	if host == "" {
		return ps.radar
	}
	ps.mu.Lock()
	r := ps.hostRadars[host]
	ps.mu.Unlock()
	if r != nil {
		return r
	}
	ctx, cancel := context.WithTimeout(ps.ctx, ps.lookTimeout)
	defer cancel()
	m, err := ps.managerOf(ctx, host)
	if err != nil {
		return workspace.NewRadar()
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if r = ps.hostRadars[host]; r == nil {
		r = workspace.NewSharedRadarOn(workspace.Owner{}, m)
		ps.hostRadars[host] = r
	}
	return r
}

// Place makes the worktree of a new isolated session, or re-enters a
// resumed session's (req.Resume), with its environment and the writable
// roots a sandboxed Codex needs to commit.
func (ps *Places) Place(ctx context.Context, req session.PlaceRequest) (*session.Place, error) {
	m, err := ps.managerOf(ctx, req.Host)
	if err != nil {
		return nil, err
	}
	var wp *workspace.Place
	var note string
	if req.Resume != nil {
		wp, note, err = ps.reenter(ctx, m, req)
	} else {
		wp, err = m.Create(ctx, workspace.Request{AgentID: req.AgentID, Identity: req.Identity, Team: ps.cfg.Team, Cwd: req.Cwd,
			Base: req.Base, Setup: ps.cfg.Setup, Ports: ps.cfg.Ports})
	}
	if err != nil {
		return nil, clientError(err, req)
	}
	roots, err := m.WritableRoots(ctx, wp)
	if err != nil {
		ps.log.Warn("no writable roots: a sandboxed agent cannot commit", "path", wp.Path, "host", req.Host, "err", err)
	}
	p := &session.Place{AgentID: req.AgentID, Identity: req.Identity, Host: req.Host, Name: wp.Name, Path: wp.Path, Cwd: wp.Cwd, Branch: wp.Branch,
		Base: wp.Base, BaseRef: wp.BaseRef, Source: wp.Source, Repo: wp.Repo, PortBase: wp.Ports.Base, PortCount: wp.Ports.Count,
		Env: envMap(wp.Env()), WritableRoots: roots, Copied: wp.Copied, SetupTail: wp.SetupTail, Resumed: wp.Resumed, Note: note}
	ps.mu.Lock()
	ps.live[req.AgentID] = agentInfo{identity: req.Identity, branch: wp.Branch, path: wp.Path, host: req.Host, repo: wp.Repo, source: wp.Source}
	old := ps.trackers[req.AgentID]
	ps.trackers[req.AgentID] = m.Track(wp)
	ps.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if wp.Resumed {
		ps.queue(p, true) // what it holds, without telling again
	}
	return p, nil
}

// reenter re-enters the recorded worktree, or makes a new one when it is
// gone.
func (ps *Places) reenter(ctx context.Context, m *workspace.Manager, req session.PlaceRequest) (*workspace.Place, string, error) {
	rec := req.Resume
	cwd := req.Cwd
	isDir := func(p string) bool { return m.IsDir(ctx, p) }
	if !isDir(cwd) {
		cwd = rec.Source
		if rel, err := filepath.Rel(rec.Path, req.Cwd); err == nil && !strings.HasPrefix(rel, "..") && isDir(filepath.Join(rec.Source, rel)) {
			cwd = filepath.Join(rec.Source, rel)
		}
	}
	if !isDir(cwd) {
		return nil, "", fmt.Errorf("the worktree %s and the checkout %s it came from are gone: %w", rec.Path, rec.Source, fs.ErrNotExist)
	}
	wp, err := m.Reenter(ctx, req.AgentID, cwd, ps.cfg.Ports)
	if !errors.Is(err, workspace.ErrNotFound) {
		return wp, "", err
	}
	// Gone (its close removed it, holding no change; or it was deleted):
	// a new one from the checkout it came from.
	src := cwd
	if rel, err := filepath.Rel(rec.Path, cwd); err == nil && !strings.HasPrefix(rel, "..") {
		src = rec.Source
		if isDir(filepath.Join(rec.Source, rel)) {
			src = filepath.Join(rec.Source, rel)
		}
	}
	wp, err = m.Create(ctx, workspace.Request{AgentID: req.AgentID, Identity: req.Identity, Team: ps.cfg.Team, Cwd: src,
		Setup: ps.cfg.Setup, Ports: ps.cfg.Ports})
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("its worktree %s (branch %s) was gone: a new one was made at %s on branch %s from %s",
		rec.Path, rec.Branch, wp.Path, wp.Branch, short(wp.Base))
	ps.log.Info("a resumed session's worktree was gone; a new one was made", "agent_id", req.AgentID, "old", rec.Path, "new", wp.Path)
	return wp, note, nil
}

// Release lets go of the session's worktree (see session.Places) and
// forgets it in the radar.
func (ps *Places) Release(ctx context.Context, p *session.Place, keep bool) (session.Released, error) {
	ps.mu.Lock()
	delete(ps.live, p.AgentID)
	delete(ps.pending, p.AgentID)
	tr := ps.trackers[p.AgentID]
	delete(ps.trackers, p.AgentID)
	ps.mu.Unlock()
	if tr != nil {
		tr.Close() // waits for a look in progress
	}
	if p.Host == "" {
		ps.radar.Forget(p.AgentID)
	} else {
		ps.mu.Lock()
		r := ps.hostRadars[p.Host] // none yet: it knows no agent
		ps.mu.Unlock()
		if r != nil {
			r.Forget(p.AgentID)
		}
	}
	m, err := ps.managerOf(ctx, p.Host)
	if err != nil {
		return session.Released{Path: p.Path, Branch: p.Branch}, err
	}
	r, err := m.Release(ctx, workspacePlace(p), keep)
	out := session.Released{Removed: r.Removed, Path: r.Path, Branch: r.Branch, Ahead: r.Ahead, Dirty: r.Dirty}
	if r.Stat.Files > 0 {
		out.Stat = r.Stat.String()
	}
	return out, err
}

// workspacePlace is the workspace's view of a session's place.
func workspacePlace(p *session.Place) *workspace.Place {
	return &workspace.Place{Name: p.Name, AgentID: p.AgentID, Path: p.Path, Cwd: p.Cwd, Branch: p.Branch, Base: p.Base,
		BaseRef: p.BaseRef, Source: p.Source, Repo: p.Repo, Ports: workspace.PortBlock{Base: p.PortBase, Count: p.PortCount}}
}

// clientError maps workspace's failures to the client's errors.
func clientError(err error, req session.PlaceRequest) error {
	var se *workspace.SetupError
	switch {
	case errors.As(err, &se):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, map[string]any{"worktree_setup": se.Command,
			"status": se.Result.Status(), "output_tail": se.Result.Tail},
			"worktree_setup %q failed in the new worktree (%s); nothing was kept, the agent did not start. Its output ends with:\n%s",
			se.Command, se.Result.Status(), strings.TrimSpace(se.Result.Tail))
	case errors.Is(err, workspace.ErrNotRepository):
		return proxyerr.Wrap(proxyerr.ErrInvalidParams, err, map[string]any{"argument": "isolation", "cwd": req.Cwd},
			"isolation \"worktree\" needs a git repository, and %s is not inside one: give a cwd in a git checkout, or isolation \"none\"", req.Cwd)
	case errors.Is(err, workspace.ErrNoCommits):
		return proxyerr.Wrap(proxyerr.ErrInvalidParams, err, map[string]any{"argument": "isolation", "cwd": req.Cwd},
			"isolation \"worktree\" needs a commit to start from, and the repository of %s has none yet: commit once, or use isolation \"none\"", req.Cwd)
	case errors.Is(err, workspace.ErrBadBase):
		return proxyerr.Wrap(proxyerr.ErrInvalidParams, err, map[string]any{"argument": "base", "base": req.Base},
			"base %q is not a commit of the repository of %s: give a branch, tag or commit id", req.Base, req.Cwd)
	case errors.Is(err, workspace.ErrOwned):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, map[string]any{"agent_id": req.AgentID},
			"the agent's worktree is held by a live process (%v): close the agent where it runs first", err)
	case errors.Is(err, workspace.ErrSymlink):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, nil,
			"refused: %v (a symbolic link there could send the agents' worktrees anywhere)", err)
	case errors.Is(err, workspace.ErrGitTooOld):
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, err, nil, "%v", err)
	}
	return proxyerr.Wrap(proxyerr.ErrInternal, err, nil, "the agent's worktree: %v", err)
}

// envMap turns NAME=value entries into a map.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// short is a commit id's first 12 characters.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
