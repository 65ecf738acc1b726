package workspace

import (
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The radar finds two agents changing one file before either merges. Each
// live worktree's change (Manager.Changes: paths and old-side line ranges
// against its base) is kept; when one is updated (a turn ended) it is
// compared with the others of the same repository, in memory: the git work
// is only the updated worktree's.

// OverlapKind says how two changes of one file meet.
type OverlapKind string

const (
	// SameLines: their line ranges intersect or touch (where git's merge
	// would conflict), or one deletes the file the other edits, or both add
	// it.
	SameLines OverlapKind = "same_lines"
	// SameFile: both change the file, on lines apart.
	SameFile OverlapKind = "same_file"
	// Rename: one renames the file the other changes or renames, or
	// renames a file onto a path the other uses.
	Rename OverlapKind = "rename"
)

// Side is one agent's part of an overlap.
type Side struct {
	Agent string `json:"agent"`
	// Path is the file's path in this agent's change (after a rename).
	Path   string      `json:"path"`
	Status string      `json:"status"`
	Ranges []LineRange `json:"ranges,omitempty"`
	// Who is the agent as its serve introduced it (UpdateAs).
	Who RadarAgent `json:"-"`
}

// RadarAgent is who an agent is, as the radar's mail names it: given by
// the serve that runs it, kept with its change so that another serve's
// radar can mail it and its lead.
type RadarAgent struct {
	Identity string `json:"identity,omitempty"`
	Branch   string `json:"branch,omitempty"`
	// Team is the ATM team its mail goes to.
	Team string `json:"team,omitempty"`
	// Lead is the identity of its serve's lead (who gets a copy).
	Lead string `json:"lead,omitempty"`
}

// Overlap is two agents changing one file of a repository.
type Overlap struct {
	Repo string `json:"repo"`
	// File is the file's path in the base (the new path for an added
	// file).
	File string      `json:"file"`
	Kind OverlapKind `json:"kind"`
	// A is the agent whose change was just seen (for Overlaps: the first
	// by name), B the other.
	A Side `json:"a"`
	B Side `json:"b"`
}

// Radar keeps the live worktrees' changes and the overlaps already told,
// per repository (keyed by its common git directory). In memory
// (NewRadar) it compares the agents given to it; shared (NewSharedRadar)
// it keeps each repository's state in that repository's common git
// directory, atm/radar.json, read and written under an flock of the
// sidecar atm/radar.lock (radarstore.go): every serve working on the repository sees the agents of the
// others, and an overlap is told once, by whichever serve sees it first.
// An agent whose serve is gone (its owner: pid, start time, host) is
// dropped by the next reader.
//
// Its methods are safe for concurrent use: one mutex, taken before the
// flock, held while one repository's state is read, compared in memory
// and written (radarstore.go).
type Radar struct {
	owner  Owner
	shared bool

	mu    sync.Mutex
	mem   map[string]*radarState    // in memory: the state, by repository
	files map[string]*radarFile     // shared: the state's files, by repository
	host  files                     // shared on a host: its files (nil here)
	hostF map[string]*hostRadarFile // shared on a host: the state's files there
	repos map[string]string         // the agents updated here → their repository
}

// radarState is one repository's agents and what was told about them.
type radarState struct {
	Version int                    `json:"version"`
	Agents  map[string]*radarEntry `json:"agents"`
	// Told are the overlaps told: by pair (agent a < agent b), by file.
	Told map[string]map[string]map[string]OverlapKind `json:"told,omitempty"`
}

// told returns what was told about the pair pk (nil: nothing).
func (st *radarState) told(pk pair) map[string]OverlapKind { return st.Told[pk.a][pk.b] }

// setTold records what is told about pk now (nothing: forgotten).
func (st *radarState) setTold(pk pair, files map[string]OverlapKind) {
	if len(files) == 0 {
		if m := st.Told[pk.a]; m != nil {
			delete(m, pk.b)
			if len(m) == 0 {
				delete(st.Told, pk.a)
			}
		}
		return
	}
	if st.Told == nil {
		st.Told = map[string]map[string]map[string]OverlapKind{}
	}
	if st.Told[pk.a] == nil {
		st.Told[pk.a] = map[string]map[string]OverlapKind{}
	}
	st.Told[pk.a][pk.b] = files
}

// radarEntry is one agent's change.
type radarEntry struct {
	Owner Owner        `json:"owner"`
	Who   RadarAgent   `json:"who"`
	Files []FileChange `json:"files"`

	byKey map[string][]FileChange // Files by key path (see keys), built on use
}

type pair struct{ a, b string } // a < b

func pairOf(a, b string) pair {
	if b < a {
		a, b = b, a
	}
	return pair{a, b}
}

// NewRadar returns a Radar that keeps its state in memory: it compares
// the agents of this process only.
func NewRadar() *Radar {
	return &Radar{owner: Self(), mem: map[string]*radarState{}, repos: map[string]string{}}
}

// NewSharedRadar returns a Radar that keeps each repository's state in
// its common git directory, for owner (zero: this process).
func NewSharedRadar(owner Owner) *Radar {
	if owner == (Owner{}) {
		owner = Self()
	}
	return &Radar{owner: owner, shared: true, files: map[string]*radarFile{}, repos: map[string]string{}}
}

// NewSharedRadarOn returns NewSharedRadar's radar for the repositories of
// m's machine: on a host (Config.Host), the state's files are the
// repository's there, read and written under the lock there through m's
// runner (radarstore_host.go), so that the agents of every serve working
// in a repository there are compared, as here.
func NewSharedRadarOn(owner Owner, m *Manager) *Radar {
	r := NewSharedRadar(owner)
	if m.host != "" {
		r.host, r.hostF = m.fs, map[string]*hostRadarFile{}
	}
	return r
}

// keys are the paths under which a change is compared: its base path, and
// for a rename or copy also its new path.
func keys(c FileChange) []string {
	if c.OldPath != "" && c.OldPath != c.Path {
		return []string{c.OldPath, c.Path}
	}
	return []string{c.Path}
}

// index returns e's files by key path.
func (e *radarEntry) index() map[string][]FileChange {
	if e.byKey == nil {
		e.byKey = map[string][]FileChange{}
		for _, f := range e.Files {
			for _, k := range keys(f) {
				e.byKey[k] = append(e.byKey[k], f)
			}
		}
	}
	return e.byKey
}

// Update is UpdateAs with no introduction.
func (r *Radar) Update(agent, repo string, files []FileChange) []Overlap {
	return r.UpdateAs(agent, repo, RadarAgent{}, files)
}

// UpdateAs stores agent's change (a live worktree of repo, the
// repository's common git directory) and returns the overlaps with the
// other agents of repo that were not told before: each pair and file once,
// and once more if an overlap of other lines becomes one of the same
// lines. An overlap that went away may be told again when it comes back.
// who says who the agent is, for the mail (another serve's radar reads
// it). With a shared radar whose state cannot be read or written, the
// change is compared with nothing and the error logged by the caller is
// the only trace: it returns no overlap.
func (r *Radar) UpdateAs(agent, repo string, who RadarAgent, files []FileChange) []Overlap {
	var news []Overlap
	r.withState(repo, func(st *radarState) bool {
		e := &radarEntry{Owner: r.owner, Who: who, Files: files}
		st.Agents[agent] = e
		for _, other := range sortedAgents(st) {
			if other == agent {
				continue
			}
			found := overlapsOf(agent, e, other, st.Agents[other])
			pk := pairOf(agent, other)
			was := st.told(pk)
			now := make(map[string]OverlapKind, len(found))
			for _, o := range found {
				prev, ok := was[o.File]
				now[o.File] = o.Kind
				if ok && (prev == o.Kind || prev == SameLines || prev == Rename || o.Kind == SameFile) {
					now[o.File] = prev
					continue
				}
				o.Repo = repo
				news = append(news, o)
			}
			// An overlap that is gone is forgotten: it may be told again.
			st.setTold(pk, now)
		}
		return true
	})
	r.mu.Lock()
	r.repos[agent] = repo
	r.mu.Unlock()
	sortOverlaps(news)
	return news
}

// Forget drops agent (its worktree is no longer live) and what was told
// about it.
func (r *Radar) Forget(agent string) {
	r.mu.Lock()
	repo, ok := r.repos[agent]
	delete(r.repos, agent)
	r.mu.Unlock()
	if !ok {
		return
	}
	r.withState(repo, func(st *radarState) bool {
		delete(st.Agents, agent)
		dropTold(st, agent)
		return true
	})
}

// Overlaps returns every overlap now between the live worktrees of the
// repositories this radar was given agents of (shared: every serve's
// agents there), told or not, sorted by repository, file and agents.
func (r *Radar) Overlaps() []Overlap {
	r.mu.Lock()
	repos := map[string]bool{}
	for _, repo := range r.repos {
		repos[repo] = true
	}
	r.mu.Unlock()
	var all []Overlap
	for repo := range repos {
		r.viewState(repo, func(st *radarState) bool {
			names := sortedAgents(st)
			for i, a := range names {
				for _, b := range names[i+1:] {
					for _, o := range overlapsOf(a, st.Agents[a], b, st.Agents[b]) {
						o.Repo = repo
						all = append(all, o)
					}
				}
			}
			return false
		})
	}
	sortOverlaps(all)
	return all
}

// sortedAgents are st's agents by name.
func sortedAgents(st *radarState) []string {
	names := make([]string, 0, len(st.Agents))
	for a := range st.Agents {
		names = append(names, a)
	}
	sort.Strings(names)
	return names
}

// dropTold forgets what was told about agent.
func dropTold(st *radarState, agent string) {
	delete(st.Told, agent)
	for a, m := range st.Told {
		delete(m, agent)
		if len(m) == 0 {
			delete(st.Told, a)
		}
	}
}

// withState runs fn on repo's state; fn reports whether it changed it.
// Shared: see radarFile.
func (r *Radar) withState(repo string, fn func(st *radarState) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.shared {
		st := r.mem[repo]
		if st == nil {
			st = newRadarState()
			r.mem[repo] = st
		}
		fn(st)
		return
	}
	if r.host != nil {
		f := r.hostF[repo]
		if f == nil {
			f = &hostRadarFile{dir: path.Join(repo, "atm"), fs: r.host}
			r.hostF[repo] = f
		}
		f.with(r.owner, fn)
		return
	}
	f := r.files[repo]
	if f == nil {
		f = &radarFile{dir: filepath.Join(repo, "atm")}
		r.files[repo] = f
	}
	f.with(r.owner, fn)
}

// viewState runs fn on repo's state to read it: withState, except that a
// host's state is the one this radar last read or wrote there (as of its
// last look), so that a listing (agent_status) never waits on the host's
// connection or lock.
func (r *Radar) viewState(repo string, fn func(st *radarState) bool) {
	if r.host == nil {
		r.withState(repo, fn)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := newRadarState()
	if f := r.hostF[repo]; f != nil && f.last != nil {
		st = f.last
	}
	fn(st)
}

// Close closes the files of a shared radar's repositories.
func (r *Radar) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for repo, f := range r.files {
		f.close()
		delete(r.files, repo)
	}
}

// overlapsOf compares two agents' changes: one overlap per file key they
// share (a rename seen under both of its paths counts once, at its base
// path).
func overlapsOf(a string, ea *radarEntry, b string, eb *radarEntry) []Overlap {
	var res []Overlap
	done := map[[2]*FileChange]bool{}
	fa0, fb0 := ea.index(), eb.index()
	ks := make([]string, 0, len(fa0))
	for k := range fa0 {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		for i := range fa0[k] {
			fa := &fa0[k][i]
			for j := range fb0[k] {
				fb := &fb0[k][j]
				if done[[2]*FileChange{fa, fb}] {
					continue
				}
				done[[2]*FileChange{fa, fb}] = true
				res = append(res, Overlap{File: k, Kind: kindOf(*fa, *fb),
					A: Side{Agent: a, Path: fa.Path, Status: fa.Status, Ranges: fa.Ranges, Who: ea.Who},
					B: Side{Agent: b, Path: fb.Path, Status: fb.Status, Ranges: fb.Ranges, Who: eb.Who}})
			}
		}
	}
	return res
}

// kindOf classifies two changes of one file.
func kindOf(a, b FileChange) OverlapKind {
	switch {
	case a.Status == "R" || b.Status == "R":
		return Rename
	case a.Status == "D" || b.Status == "D", a.Status == "A" && b.Status == "A", a.Binary || b.Binary:
		return SameLines
	}
	for _, x := range a.Ranges {
		for _, y := range b.Ranges {
			if x.Start <= y.End+1 && y.Start <= x.End+1 {
				return SameLines
			}
		}
	}
	return SameFile
}

func sortOverlaps(os []Overlap) {
	sort.Slice(os, func(i, j int) bool {
		x, y := os[i], os[j]
		if x.Repo != y.Repo {
			return x.Repo < y.Repo
		}
		if x.File != y.File {
			return x.File < y.File
		}
		return strings.Compare(x.A.Agent+"\x00"+x.B.Agent, y.A.Agent+"\x00"+y.B.Agent) < 0
	})
}
