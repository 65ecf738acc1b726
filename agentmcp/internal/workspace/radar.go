package workspace

import (
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

// Radar keeps the live worktrees' changes and the overlaps already told.
// Its methods are safe for concurrent use (one mutex, held only while
// comparing in memory).
type Radar struct {
	mu       sync.Mutex
	agents   map[string]*radarEntry          // by agent
	reported map[pair]map[string]OverlapKind // told overlaps: by pair, by file
}

type radarEntry struct {
	repo  string
	files map[string][]FileChange // by key path (see keys)
}

type pair struct{ a, b string } // a < b

func pairOf(a, b string) pair {
	if b < a {
		a, b = b, a
	}
	return pair{a, b}
}

// NewRadar returns an empty Radar.
func NewRadar() *Radar {
	return &Radar{agents: map[string]*radarEntry{}, reported: map[pair]map[string]OverlapKind{}}
}

// keys are the paths under which a change is compared: its base path, and
// for a rename or copy also its new path.
func keys(c FileChange) []string {
	if c.OldPath != "" && c.OldPath != c.Path {
		return []string{c.OldPath, c.Path}
	}
	return []string{c.Path}
}

// Update stores agent's change (a live worktree of repo, the repository's
// common git directory) and returns the overlaps with the other agents of
// repo that were not told before: each pair and file once, and once more if
// an overlap of other lines becomes one of the same lines. An overlap that
// went away may be told again when it comes back.
func (r *Radar) Update(agent, repo string, files []FileChange) []Overlap {
	e := &radarEntry{repo: repo, files: map[string][]FileChange{}}
	for _, f := range files {
		for _, k := range keys(f) {
			e.files[k] = append(e.files[k], f)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agents[agent] = e
	var news []Overlap
	for other, oe := range r.agents {
		if other == agent || oe.repo != repo {
			continue
		}
		found := overlapsOf(agent, e, other, oe)
		pk := pairOf(agent, other)
		told := r.reported[pk]
		now := make(map[string]OverlapKind, len(found))
		for _, o := range found {
			prev, was := told[o.File]
			now[o.File] = o.Kind
			if was && (prev == o.Kind || prev == SameLines || prev == Rename || o.Kind == SameFile) {
				now[o.File] = prev
				continue
			}
			o.Repo = repo
			news = append(news, o)
		}
		// An overlap that is gone is forgotten: it may be told again.
		if len(now) == 0 {
			delete(r.reported, pk)
		} else {
			r.reported[pk] = now
		}
	}
	sortOverlaps(news)
	return news
}

// Forget drops agent (its worktree is no longer live) and what was told
// about it.
func (r *Radar) Forget(agent string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.agents, agent)
	for k := range r.reported {
		if k.a == agent || k.b == agent {
			delete(r.reported, k)
		}
	}
}

// Overlaps returns every overlap between the live worktrees now, told or
// not, sorted by repository, file and agents.
func (r *Radar) Overlaps() []Overlap {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.agents))
	for a := range r.agents {
		names = append(names, a)
	}
	sort.Strings(names)
	var all []Overlap
	for i, a := range names {
		for _, b := range names[i+1:] {
			ea, eb := r.agents[a], r.agents[b]
			if ea.repo != eb.repo {
				continue
			}
			for _, o := range overlapsOf(a, ea, b, eb) {
				o.Repo = ea.repo
				all = append(all, o)
			}
		}
	}
	sortOverlaps(all)
	return all
}

// overlapsOf compares two agents' changes: one overlap per file key they
// share (a rename seen under both of its paths counts once, at its base
// path).
func overlapsOf(a string, ea *radarEntry, b string, eb *radarEntry) []Overlap {
	var res []Overlap
	done := map[[2]*FileChange]bool{}
	ks := make([]string, 0, len(ea.files))
	for k := range ea.files {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		for i := range ea.files[k] {
			fa := &ea.files[k][i]
			for j := range eb.files[k] {
				fb := &eb.files[k][j]
				if done[[2]*FileChange{fa, fb}] {
					continue
				}
				done[[2]*FileChange{fa, fb}] = true
				res = append(res, Overlap{File: k, Kind: kindOf(*fa, *fb),
					A: Side{Agent: a, Path: fa.Path, Status: fa.Status, Ranges: fa.Ranges},
					B: Side{Agent: b, Path: fb.Path, Status: fb.Status, Ranges: fb.Ranges}})
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
