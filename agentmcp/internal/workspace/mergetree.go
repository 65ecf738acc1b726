package workspace

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Merges are computed by `git merge-tree --write-tree`, which needs no
// checkout and changes no ref. It merges from the two commits' merge base;
// to merge from another base (the commit after which the agent's work
// starts, or a replayed commit's parent: what git 2.40's --merge-base
// does), the lead's side is given as a new commit with the lead's tree and
// that base as its only parent. Such commits, like every commit built here
// before a ref points at it, are loose objects that git's gc drops.

// Signature names an author.
type Signature struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

func (s Signature) env(kind string) []string {
	return []string{"GIT_" + kind + "_NAME=" + s.Name, "GIT_" + kind + "_EMAIL=" + s.Email}
}

// Conflict is one file that does not merge.
type Conflict struct {
	Path string `json:"path"`
	// Kind is git's: "contents", "modify/delete", "rename/delete",
	// "add/add", "binary", "file/directory"…
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Hunks are the conflicting regions of a text file.
	Hunks []ConflictHunk `json:"hunks,omitempty"`
	// Commit is, with strategy rebase, the agent's commit being replayed.
	Commit string `json:"commit,omitempty"`
}

// ConflictHunk is one conflicting region: the lead's lines and the
// agent's.
type ConflictHunk struct {
	// Line is where the region starts in the merged file (with markers).
	Line   int    `json:"line"`
	Lead   string `json:"lead"`
	Agent  string `json:"agent"`
	Base   string `json:"base,omitempty"` // with merge.conflictStyle diff3
	Header string `json:"-"`
}

// commitTree makes a commit of tree with parents and message, under env
// (committer and author).
func (m *Manager) commitTree(ctx context.Context, dir string, env []string, tree, message string, parents ...string) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	b, err := m.git.run(ctx, dir, gitOpts{env: env, stdin: strings.NewReader(message)}, args...)
	if err != nil {
		return "", fmt.Errorf("workspace: commit: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// mergeOnto merges theirs into the tree oursTree as if both started at
// base: oursTree plus the change base→theirs. It returns the merged tree,
// or the conflicts.
func (m *Manager) mergeOnto(ctx context.Context, dir string, env []string, oursTree, theirs, base string) (string, []Conflict, error) {
	side, err := m.commitTree(ctx, dir, env, oursTree, "atm-agent-mcp: the lead's tree on the agent's base\n", base)
	if err != nil {
		return "", nil, err
	}
	out, err := m.git.run(ctx, dir, gitOpts{}, "merge-tree", "--write-tree", "-z", "--messages", side, theirs)
	if c, ok := exitCode(err); err != nil && !(ok && c == 1) {
		return "", nil, fmt.Errorf("workspace: merge: %w", err)
	}
	tree, conflicts, perr := parseMergeTree(out)
	if perr != nil {
		return "", nil, perr
	}
	if err == nil { // exit 0: clean
		return tree, nil, nil
	}
	if len(conflicts) == 0 {
		return "", nil, fmt.Errorf("workspace: merge-tree reported a conflict it did not list: %q", clipTail(string(out), 500))
	}
	if err := m.conflictHunks(ctx, dir, tree, conflicts); err != nil {
		return "", nil, err
	}
	return tree, conflicts, nil
}

// parseMergeTree reads `merge-tree --write-tree -z --messages`: the tree
// NUL; with conflicts the conflicted entries ("<mode> <oid> <stage>\t<path>"
// NUL), then an empty field; then the messages, each "<n>" NUL, n paths
// NUL, "<type>" NUL, "<message>" NUL. Conflicts are the paths of entries
// and of CONFLICT messages, with the message's kind.
func parseMergeTree(out []byte) (string, []Conflict, error) {
	f := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(f) == 0 || f[0] == "" {
		return "", nil, fmt.Errorf("workspace: empty merge-tree output")
	}
	tree := f[0]
	byPath := map[string]*Conflict{}
	var order []string
	add := func(p string) *Conflict {
		if c := byPath[p]; c != nil {
			return c
		}
		byPath[p] = &Conflict{Path: p}
		order = append(order, p)
		return byPath[p]
	}
	i := 1
	for ; i < len(f) && f[i] != ""; i++ {
		if _, p, ok := strings.Cut(f[i], "\t"); ok && p != "" {
			add(p)
		}
	}
	i++ // the empty field
	for i < len(f) {
		n, err := strconv.Atoi(f[i])
		if err != nil || i+n+2 >= len(f) {
			break
		}
		paths := f[i+1 : i+1+n]
		kind, msg := f[i+1+n], strings.TrimSpace(f[i+2+n])
		i += n + 3
		if !strings.HasPrefix(kind, "CONFLICT") || len(paths) == 0 {
			continue
		}
		k := strings.TrimSuffix(strings.TrimPrefix(kind, "CONFLICT ("), ")")
		for _, p := range paths {
			if p == "" {
				continue
			}
			c := add(p)
			if c.Kind == "" {
				c.Kind, c.Message = k, msg
			} else if !strings.Contains(c.Message, msg) {
				c.Message += "; " + msg
			}
		}
	}
	res := make([]Conflict, 0, len(order))
	for _, p := range order {
		c := byPath[p]
		if c.Kind == "" {
			c.Kind = "contents"
		}
		res = append(res, *c)
	}
	sort.Slice(res, func(a, b int) bool { return res[a].Path < res[b].Path })
	return tree, res, nil
}

// conflictHunks reads each conflicted file of the merged tree and keeps
// its regions between conflict markers.
func (m *Manager) conflictHunks(ctx context.Context, dir, tree string, cs []Conflict) error {
	var in bytes.Buffer
	for _, c := range cs {
		in.WriteString(tree + ":" + c.Path + "\n")
	}
	out, err := m.git.run(ctx, dir, gitOpts{stdin: &in}, "cat-file", "--batch")
	if err != nil {
		return fmt.Errorf("workspace: read conflicts: %w", err)
	}
	for i := range cs {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			break
		}
		head := strings.Fields(string(out[:nl]))
		out = out[nl+1:]
		if len(head) != 3 { // "<what> missing": a deleted side
			continue
		}
		size, err := strconv.Atoi(head[2])
		if err != nil || size > len(out) {
			break
		}
		if head[1] == "blob" {
			cs[i].Hunks = markerHunks(string(out[:size]))
		}
		out = out[min(len(out), size+1):]
	}
	return nil
}

// markerHunks extracts the regions between "<<<<<<<" and ">>>>>>>" lines.
func markerHunks(text string) []ConflictHunk {
	var hunks []ConflictHunk
	var cur *ConflictHunk
	part := 0 // 1 lead, 2 base, 3 agent
	var b strings.Builder
	flush := func() {
		switch part {
		case 1:
			cur.Lead = b.String()
		case 2:
			cur.Base = b.String()
		case 3:
			cur.Agent = b.String()
		}
		b.Reset()
	}
	for n, line := range strings.SplitAfter(text, "\n") {
		switch {
		case strings.HasPrefix(line, "<<<<<<< ") || strings.TrimRight(line, "\n") == "<<<<<<<":
			cur, part = &ConflictHunk{Line: n + 1}, 1
			b.Reset()
		case cur == nil:
		case strings.HasPrefix(line, "||||||| ") || strings.TrimRight(line, "\n") == "|||||||":
			flush()
			part = 2
		case strings.TrimRight(line, "\n") == "=======":
			flush()
			part = 3
		case strings.HasPrefix(line, ">>>>>>> ") || strings.TrimRight(line, "\n") == ">>>>>>>":
			flush()
			hunks = append(hunks, *cur)
			cur, part = nil, 0
		default:
			b.WriteString(line)
		}
	}
	return hunks
}

// replayCommit is one commit of the agent to replay (strategy rebase).
type replayCommit struct {
	id, parent, tree       string
	name, email, date, msg string
}

// commitsToReplay lists the non-merge commits of from..to, oldest first.
func (m *Manager) commitsToReplay(ctx context.Context, dir, from, to string) ([]replayCommit, error) {
	out, err := m.git.run(ctx, dir, gitOpts{}, "log", "--reverse", "--topo-order", "--no-merges", "--date=raw",
		"--format=%H%x00%P%x00%T%x00%an%x00%ae%x00%ad%x00%B%x00", from+".."+to)
	if err != nil {
		return nil, fmt.Errorf("workspace: commits to replay: %w", err)
	}
	f := strings.Split(string(out), "\x00")
	var cs []replayCommit
	for i := 0; i+7 <= len(f); i += 7 {
		c := replayCommit{id: strings.TrimSpace(f[i]), tree: f[i+2], name: f[i+3], email: f[i+4], date: f[i+5], msg: f[i+6]}
		if ps := strings.Fields(f[i+1]); len(ps) > 0 {
			c.parent = ps[0]
		}
		if c.id == "" {
			break
		}
		cs = append(cs, c)
	}
	return cs, nil
}
