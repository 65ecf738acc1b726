package session

import (
	"context"
	"strconv"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// This file is where a session works: the directory its agent's turns run
// in, by default the cwd it was given; for a session started with
// isolation "worktree" a place of its own (a git worktree of the
// repository that holds its cwd, on its own branch, with a block of
// ports), given by Config.Places. The package knows only the neutral facts
// of a place; how it is made is the implementation's (package workspace,
// through an adapter of the composition root).
//
// A place is taken before anything is recorded (Create: refused outside a
// git repository, or when its setup fails, with nothing left behind),
// re-entered by a resume (Rebind) before the record goes live, kept
// across a hand-over or a shutdown (Release with keep: only unlocked, for
// the next serve), and released at agent_close (removed when it holds no
// change, else kept and named in the close's outcome). The registry record
// (registry.Session.Worktree) says which worktree is the session's.

// The isolation of a session (CreateRequest.Isolation).
const (
	// IsolationNone: the session works in the directory it was given,
	// with every other session there.
	IsolationNone = "none"
	// IsolationWorktree: the session works in a git worktree of its own.
	IsolationWorktree = "worktree"
)

// errNoPlaces answers an isolated start in a serve without Places.
var errNoPlaces = proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "isolation"},
	"isolation \"worktree\" is not available in this serve (git was not found when it started): start the agent with isolation \"none\"")

// Places gives isolated sessions a place of their own and takes it back.
// Its methods are called with none of the package's locks held; Place and
// Release may take a while (git, a setup command).
type Places interface {
	// Place makes the session's place, or re-enters the one req.Resume
	// names (a resume). It fails, leaving nothing behind, when there can
	// be none: cwd is not in a git repository, the base is unknown, the
	// setup command failed, another live process holds the worktree. The
	// error is the client's answer (a proxyerr error) when it is the
	// caller's to fix.
	Place(ctx context.Context, req PlaceRequest) (*Place, error)
	// Release ends the session's hold on p and frees its ports. With keep
	// (the session stays resumable: a shutdown, a hand-over) the place is
	// only let go of; without (agent_close), it is removed when it holds
	// no change, else kept, and the result says which.
	Release(ctx context.Context, p *Place, keep bool) (Released, error)
	// TurnEnded tells that a turn of the session in p has ended (the
	// conflict radar looks at its change). It must not block.
	TurnEnded(p *Place)
}

// PlaceRequest asks for a session's place.
type PlaceRequest struct {
	AgentID  string
	Identity string
	// Cwd is the session's directory (absolute, existing): the place is
	// made of the repository that holds it, and Place.Cwd is the same
	// directory in the place.
	Cwd string
	// Base is the revision the place starts from. optional: "" means the
	// HEAD of the checkout that holds Cwd.
	Base string
	// Resume is the session's recorded place: re-enter it. optional.
	Resume *registry.Worktree
	// Host is the host the session runs on (Config.Hosts): its place is
	// made there, in the repository there that holds Cwd (a path there).
	// optional: "" is this machine.
	Host string
}

// Place is a session's working place: a git worktree of its own. Its
// fields are facts, not handles: a Place may be rebuilt from the record.
type Place struct {
	AgentID  string
	Identity string
	// Host is the host the place is on ("" for this machine): its paths
	// are paths there.
	Host string
	// Name is the worktree's name: its directory and branch end with it.
	Name string
	// Path is the worktree's root; Cwd the session's directory in it.
	Path, Cwd string
	// Branch is the worktree's branch ("atm/alice"); Base the commit it
	// started at, BaseRef what that was asked as.
	Branch, Base, BaseRef string
	// Source is the checkout it was made from (the lead's); Repo the
	// repository's common git directory.
	Source, Repo string
	// PortBase and PortCount are the session's block of ports (PortCount 0
	// when none).
	PortBase, PortCount int
	// Env is what the agent's commands get: ATM_WORKTREE, ATM_BRANCH,
	// ATM_PORT_BASE, ATM_PORT_COUNT.
	Env map[string]string
	// WritableRoots are the directories besides the worktree that a
	// sandboxed agent must be able to write to commit on its branch (never
	// given to a read-only thread).
	WritableRoots []string
	// Copied are the untracked files copied in from the source checkout
	// (.worktreeinclude), relative to Path.
	Copied []string
	// SetupTail is the end of the setup command's output.
	SetupTail string
	// Resumed is true when an existing worktree was re-entered; Note says
	// what a resume could not give back ("the worktree … was gone: a new
	// one was made").
	Resumed bool
	Note    string
}

// Released says what became of a place at the end of its session.
type Released struct {
	// Removed: it held no change, and it is gone with its branch.
	Removed bool
	Path    string
	Branch  string
	// Ahead counts its commits that its base lacks; Dirty its uncommitted
	// paths.
	Ahead, Dirty int
	// Stat is its change against its base ("2 files changed, …") when it
	// was kept.
	Stat string
}

// String says what became of the place: "worktree removed (it held no
// change)" or "worktree kept: branch atm/alice at /r/.atm/worktrees/alice,
// 2 commits, 1 uncommitted path (3 files changed, …)".
func (r *Released) String() string {
	if r.Removed {
		return "worktree " + r.Path + " removed with its branch " + r.Branch + " (it held no change)"
	}
	s := "worktree kept: branch " + r.Branch + " at " + r.Path
	if r.Ahead > 0 {
		s += ", " + strconv.Itoa(r.Ahead) + " commit(s)"
	}
	if r.Dirty > 0 {
		s += ", " + strconv.Itoa(r.Dirty) + " uncommitted path(s)"
	}
	if r.Stat != "" {
		s += " (" + r.Stat + ")"
	}
	return s
}

// Kept reports whether the place holds work and was kept.
func (r *Released) Kept() bool { return r != nil && !r.Removed }

// record is the place as the registry keeps it.
func (p *Place) record() *registry.Worktree {
	return &registry.Worktree{Name: p.Name, Path: p.Path, Branch: p.Branch, Base: p.Base, BaseRef: p.BaseRef, Source: p.Source,
		PortBase: p.PortBase, PortCount: p.PortCount}
}

// Ports is the block as "20010-20019", or "" without one.
func (p *Place) Ports() string {
	if p == nil || p.PortCount == 0 {
		return ""
	}
	return strconv.Itoa(p.PortBase) + "-" + strconv.Itoa(p.PortBase+p.PortCount-1)
}

// Place returns a copy of the session's place, nil when it has none (not
// isolated, or not live).
func (s *Session) Place() *Place {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.place == nil {
		return nil
	}
	p := *s.place
	return &p
}

// Released returns what the session's close did with its place, nil when
// it had none or has not been closed.
func (s *Session) Released() *Released {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// takePlace makes the place of a session about to be created, before
// anything is recorded: nil without isolation.
func (c *Config) takePlace(ctx context.Context, r CreateRequest, agentID string) (*Place, error) {
	if r.Isolation != IsolationWorktree {
		return nil, nil
	}
	if c.Places == nil {
		return nil, errNoPlaces
	}
	return c.Places.Place(ctx, PlaceRequest{AgentID: agentID, Identity: r.Identity, Cwd: r.Cwd, Base: r.Base, Host: r.Host})
}

// reenterPlace re-enters the recorded place (rec) of s, a session being
// resumed (nil when it has none, or holds it already).
func (s *Session) reenterPlace(ctx context.Context, rec registry.Session) (*Place, error) {
	if rec.Worktree == nil || s.Place() != nil {
		return nil, nil
	}
	if s.m.cfg.Places == nil {
		return nil, errNoPlaces
	}
	return s.m.cfg.Places.Place(ctx, PlaceRequest{AgentID: rec.AgentID, Identity: rec.Identity, Cwd: rec.Cwd, Resume: rec.Worktree, Host: rec.Host})
}

// releasePlace lets go of the session's place (see Places.Release) and
// forgets it; with keep false, what became of it is kept for the close's
// outcome and written to the record. It does nothing for a session
// without one.
func (s *Session) releasePlace(ctx context.Context, keep bool) *Released {
	m := s.m
	s.mu.Lock()
	p := s.place
	s.place = nil
	s.mu.Unlock()
	if p == nil || m.cfg.Places == nil {
		return nil
	}
	r, err := m.cfg.Places.Release(ctx, p, keep)
	if err != nil {
		m.log.Error("cannot release the session's worktree; it is kept", "agent_id", p.AgentID, "path", p.Path, "err", err)
		r = Released{Path: p.Path, Branch: p.Branch}
	}
	if keep {
		return nil
	}
	s.mu.Lock()
	s.released = &r
	s.mu.Unlock()
	how := "kept"
	if r.Removed {
		how = "removed"
	}
	rec, err := m.cfg.Registry.Update(p.AgentID, func(x *registry.Session) {
		if x.Worktree != nil {
			x.Worktree.Released, x.Worktree.Stat = how, r.Stat
			x.Worktree.PortBase, x.Worktree.PortCount = 0, 0
		}
	})
	if err == nil {
		s.mu.Lock()
		s.rec.Worktree = rec.Worktree
		s.mu.Unlock()
	}
	return &r
}

// placeEnv is a place's environment for the thread parameters (nil
// without a place).
func placeEnv(p *Place) map[string]string {
	if p == nil {
		return nil
	}
	return p.Env
}
