package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

// Request asks for a session's worktree.
type Request struct {
	// AgentID is the session's agent_id: it owns the worktree. required.
	AgentID string
	// Identity names the worktree and its branch (atm/<identity>, with -2,
	// -3… when taken). required.
	Identity string
	// Team is recorded with the worktree. optional.
	Team string
	// Cwd is the session's working directory: the worktree is made of the
	// checkout that holds it, and Place.Cwd is the same place below the
	// worktree. required, absolute.
	Cwd string
	// Base is the revision the branch starts at. optional: "" means the
	// checkout's HEAD.
	Base string
	// Setup is a command line run with sh -c in the new worktree before it
	// is handed out; when it fails, everything made is removed. optional.
	Setup string
	// Ports is how many ports to reserve for the session. optional: 0 means
	// none.
	Ports int
}

// Place is a session's worktree, as handed out.
type Place struct {
	Name    string // the worktree's name (its directory and branch end with it)
	AgentID string
	Path    string // the worktree's root
	Cwd     string // the request's cwd, below Path
	Branch  string // "atm/<name>"
	Base    string // the commit the branch started at
	BaseRef string // what the base was asked as
	Source  string // the checkout it was made from (the lead's)
	Repo    string // the repository's common git directory
	// Copied are the files .worktreeinclude brought in, relative to Path.
	Copied []string
	// SetupTail is the end of the setup command's output.
	SetupTail string
	// Ports is the session's block of ports (zero Count when none).
	Ports PortBlock
	// Resumed is true when an existing worktree was re-entered.
	Resumed bool
}

// Env is what the session's commands should see: ATM_WORKTREE, ATM_BRANCH,
// and with ports ATM_PORT_BASE and ATM_PORT_COUNT.
func (p *Place) Env() []string {
	env := []string{"ATM_WORKTREE=" + p.Path, "ATM_BRANCH=" + p.Branch}
	if p.Ports.Count > 0 {
		env = append(env, "ATM_PORT_BASE="+strconv.Itoa(p.Ports.Base), "ATM_PORT_COUNT="+strconv.Itoa(p.Ports.Count))
	}
	return env
}

// Place returns the session's worktree: the one it already has when a
// record names req.AgentID (a resume: see Reenter), else a new one (Create).
func (m *Manager) Place(ctx context.Context, req Request) (*Place, error) {
	p, err := m.Reenter(ctx, req.AgentID, req.Cwd, req.Ports)
	if !errors.Is(err, ErrNotFound) {
		return p, err
	}
	return m.Create(ctx, req)
}

// Create makes a worktree for a session: a new branch atm/<name> at the
// base, checked out at <checkout root>/.atm/worktrees/<name>, locked for
// the session (git worktree lock, with its agent_id and this serve in the
// reason), with the .worktreeinclude files copied in, ports reserved and
// the setup command run. On any failure everything it made is removed.
func (m *Manager) Create(ctx context.Context, req Request) (*Place, error) {
	if req.AgentID == "" || req.Identity == "" || !filepath.IsAbs(req.Cwd) {
		return nil, errors.New("workspace: create: AgentID, Identity and an absolute Cwd are required")
	}
	if req.Ports > 0 && m.ports == nil {
		return nil, errors.New("workspace: create: ports asked for but the manager has no port registry")
	}
	cwd, err := m.fs.realDir(ctx, req.Cwd)
	if err != nil {
		return nil, fmt.Errorf("workspace: create: %w", err)
	}
	src, err := m.checkoutOf(ctx, cwd)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(src.Top, cwd)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("workspace: create: %s is not below %s", cwd, src.Top)
	}
	baseRef := req.Base
	if baseRef == "" {
		baseRef = "HEAD"
	}
	base, err := m.commitOf(ctx, src.Top, baseRef)
	if err != nil {
		if baseRef == "HEAD" {
			return nil, fmt.Errorf("workspace: create in %s: %w: %w", src.Top, ErrNoCommits, err)
		}
		return nil, fmt.Errorf("workspace: create: base %q: %w: %w", baseRef, ErrBadBase, err)
	}
	if err := m.fs.safeDirs(ctx, src.Top, WorktreesDir); err != nil {
		return nil, err
	}
	if err := m.ensureExcluded(ctx, src.Top); err != nil {
		return nil, err
	}
	rec, err := m.addWorktree(ctx, src, req, base, baseRef)
	if err != nil {
		return nil, err
	}
	p := &Place{Name: rec.Name, AgentID: req.AgentID, Path: rec.Path, Cwd: filepath.Join(rec.Path, rel),
		Branch: rec.Branch, Base: base, BaseRef: baseRef, Source: src.Top, Repo: src.Common}
	ok := false
	defer func() {
		if !ok {
			m.discard(context.WithoutCancel(ctx), *rec, p)
		}
	}()
	if err := m.fs.mkdirAll(ctx, p.Cwd); err != nil {
		return nil, fmt.Errorf("workspace: create: %w", err)
	}
	if p.Copied, err = m.copyIncluded(ctx, src.Top, rec.Path); err != nil {
		return nil, err
	}
	if req.Ports > 0 {
		if p.Ports, err = m.ports.Reserve(req.Ports, req.AgentID); err != nil {
			return nil, fmt.Errorf("workspace: create: %w", err)
		}
	}
	if req.Setup != "" {
		if p.SetupTail, err = m.runSetup(ctx, req.Setup, p); err != nil {
			return nil, err
		}
	}
	ok = true
	m.log.Info("worktree created", "agent_id", req.AgentID, "path", p.Path, "branch", p.Branch, "base", base)
	return p, nil
}

// addWorktree reserves a name (its record ref, created only if absent) and
// adds the locked worktree on a new branch; a name taken meanwhile (its
// branch, directory or record) makes it try the next: name-2, name-3…
func (m *Manager) addWorktree(ctx context.Context, src checkout, req Request, base, baseRef string) (*record, error) {
	stem := nameOf(req.Identity)
	parent := filepath.Join(src.Top, WorktreesDir)
	for i := 1; i <= 100; i++ {
		name := stem
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		rec := &record{Name: name, AgentID: req.AgentID, Identity: req.Identity, Team: req.Team,
			Branch: BranchPrefix + name, Path: filepath.Join(parent, name), Source: src.Top,
			Base: base, BaseRef: baseRef, Landed: base, Created: m.now().UTC(), ref: recordRefs + name}
		if taken, err := m.nameTaken(ctx, src.Top, rec); err != nil {
			return nil, err
		} else if taken {
			continue
		}
		if err := m.writeRecord(ctx, src.Top, rec); err != nil {
			if ok, _ := m.refExists(ctx, src.Top, rec.ref); ok {
				continue // another serve took the name first
			}
			return nil, err
		}
		_, err := m.git.out(ctx, src.Top, "worktree", "add", "--quiet", "--no-track", "--lock",
			"--reason", lockReason(req.AgentID, m.owner), "-b", rec.Branch, rec.Path, base)
		if err != nil {
			_ = m.deleteRecord(context.WithoutCancel(ctx), src.Top, *rec)
			if taken, _ := m.nameTaken(ctx, src.Top, rec); taken {
				continue
			}
			return nil, fmt.Errorf("workspace: add worktree %s: %w", rec.Path, err)
		}
		if real, err := m.fs.realDir(ctx, rec.Path); err != nil || real != rec.Path {
			m.discard(context.WithoutCancel(ctx), *rec, nil)
			return nil, fmt.Errorf("workspace: %s: %w", rec.Path, ErrSymlink)
		}
		return rec, nil
	}
	return nil, fmt.Errorf("workspace: no free worktree name for %q", req.Identity)
}

// nameTaken reports whether rec's branch, directory or record exists.
func (m *Manager) nameTaken(ctx context.Context, dir string, rec *record) (bool, error) {
	if there, err := m.fs.exists(ctx, rec.Path); err != nil || there {
		return true, nil
	}
	for _, ref := range []string{"refs/heads/" + rec.Branch, rec.ref} {
		if ok, err := m.refExists(ctx, dir, ref); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// nameOf turns an identity into a worktree name: letters, digits, '.',
// '_' and '-', never starting with '.' or '-', at most 64 bytes.
func nameOf(identity string) string {
	var b strings.Builder
	for _, r := range identity {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.':
			if !strings.HasSuffix(b.String(), ".") {
				b.WriteRune(r)
			}
		default:
			b.WriteByte('-')
		}
	}
	s := strings.TrimLeft(b.String(), ".-")
	if len(s) > 64 {
		s = s[:64]
	}
	s = strings.TrimSuffix(strings.TrimRight(s, "."), ".lock")
	if s == "" {
		s = "agent"
	}
	return s
}

// excludeLines keep our folders out of the user's `git status`.
var excludeLines = []string{"/" + WorktreesDir + "/", "/" + ChecksDir + "/"}

// ensureExcluded adds excludeLines to the repository's info/exclude (in the
// common git directory, shared by all its worktrees), never to a
// .gitignore: the user's files stay as they are.
func (m *Manager) ensureExcluded(ctx context.Context, dir string) error {
	path, err := m.git.out(ctx, dir, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
	if err != nil {
		return fmt.Errorf("workspace: find info/exclude: %w", err)
	}
	old, err := m.fs.readFile(ctx, path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	add := ""
	for _, l := range excludeLines {
		if !have[l] {
			add += l + "\n"
		}
	}
	if add == "" {
		return nil
	}
	text := string(old)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# atm-agent-mcp: agents' worktrees and merge checks\n" + add
	if err := m.fs.mkdirAll(ctx, filepath.Dir(path)); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return m.fs.writeFileAtomic(ctx, path, []byte(text), 0o644)
}

// discard removes a worktree that Create made and could not finish: the
// worktree (whatever the setup left in it), its branch, its record, its
// ports. p may be nil.
func (m *Manager) discard(ctx context.Context, rec record, p *Place) {
	if p != nil && p.Ports.Count > 0 {
		_ = m.ports.Release(p.Ports)
	}
	if _, err := m.git.out(ctx, rec.Source, "worktree", "remove", "--force", "--force", rec.Path); err != nil {
		m.log.Warn("could not remove the unfinished worktree", "path", rec.Path, "err", err)
	}
	ref := "refs/heads/" + rec.Branch
	if tip, err := m.git.out(ctx, rec.Source, "rev-parse", "--verify", "--quiet", ref); err == nil {
		if _, err := m.git.out(ctx, rec.Source, "update-ref", "-d", ref, tip); err != nil {
			m.log.Warn("could not delete the unfinished worktree's branch", "branch", rec.Branch, "err", err)
		}
	}
	if err := m.deleteRecord(ctx, rec.Source, rec); err != nil {
		m.log.Warn("could not delete the unfinished worktree's record", "ref", rec.ref, "err", err)
	}
}
