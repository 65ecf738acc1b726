package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Status is the registry status of a session.
type Status string

// Session statuses. Active, busy and idle sessions are live: they hold their
// identity. The others never do.
const (
	StatusActive      Status = "active"      // bound, thread state unknown or not tracked
	StatusBusy        Status = "busy"        // a turn is in progress
	StatusIdle        Status = "idle"        // turn complete, waiting for input
	StatusClosed      Status = "closed"      // closed by agent_close or shutdown
	StatusStale       Status = "stale"       // was live when its proxy process ended
	StatusInterrupted Status = "interrupted" // closed while a turn ran: the turn was cut
)

// Live reports whether a session with this status holds its identity.
func (s Status) Live() bool {
	return s == StatusActive || s == StatusBusy || s == StatusIdle
}

// ThreadState is the FR-17 lifecycle state of a session's thread (a
// Codex thread, or another agent kind's session).
type ThreadState string

// Thread states.
const (
	ThreadBusy   ThreadState = "busy"
	ThreadIdle   ThreadState = "idle"
	ThreadClosed ThreadState = "closed"
)

// DefaultKind is the agent kind of a record that names none (records
// written before serve ran agents of other kinds were all Codex's), and of
// a new session whose caller names none: Add records it. Serve's
// composition root registers its Codex backend under this name, beside
// one backend per configured ACP agent kind (each under the agent's name);
// the domain picks a session's backend by the kind its record names
// (Session.Kind) and knows no kind by name.
const DefaultKind = "codex"

// MaxLastResult bounds Session.LastResult, in characters: a resume's note,
// not the whole answer.
const MaxLastResult = 4000

// Session is one registry entry. Empty strings for BackendID, RepoRoot,
// RepoName, Branch, Tag, Role, AgentSource and LastResult are written as
// JSON null. Times
// are stored in UTC.
type Session struct {
	AgentID string `json:"agent_id"`
	// Backend is the session's agent kind ("codex", "claude", …): the
	// backend its turns run on. "" (a record written before kinds) means
	// DefaultKind: read it with Kind.
	Backend     string      `json:"backend"`
	BackendID   string      `json:"backend_id"` // the thread's id (Codex's thread, an ACP session); "" until known
	Identity    string      `json:"identity"`
	Team        string      `json:"team"`
	RepoRoot    string      `json:"repo_root"` // "" outside a git repository
	RepoName    string      `json:"repo_name"` // "" outside a git repository
	Branch      string      `json:"branch"`
	Cwd         string      `json:"cwd"`
	StartedAt   time.Time   `json:"started_at"`
	LastActive  time.Time   `json:"last_active"`
	Status      Status      `json:"status"`
	ThreadState ThreadState `json:"thread_state"`
	Tag         string      `json:"tag"`
	Role        string      `json:"role"`
	AgentSource string      `json:"agent_source"` // agent file the session was started from
	// Turns counts the turns the session has run, in every process that
	// ran it: it survives a restart and a resume (0 until its first ends;
	// a record written before it existed reads 0).
	Turns int `json:"turns"`
	// LastResult is the text of its last turn's result, clipped (see
	// MaxLastResult): what a resume on a new thread can tell the agent
	// when no summary was saved. "" until a turn ended.
	LastResult string `json:"last_result"`
	// HandedTo names the Claude Code session (the first 8 characters of
	// its id) that the session was handed over to when its proxy's
	// conversation moved there; the proxy serving that Claude Code
	// session takes it up live. "" otherwise (written only when set).
	HandedTo string `json:"handed_to,omitempty"`
	// Worktree is the session's own git worktree, for a session started
	// with isolation "worktree"; nil otherwise (written only when set).
	// A resume re-enters it.
	Worktree *Worktree `json:"worktree,omitempty"`
	// Model is the model the agent last said it runs, else the one it was
	// started with ("" when neither is known; written only when set): what
	// prices the session's tokens once no serve runs it.
	Model string `json:"model,omitempty"`
	// Usage is the session's token usage over its life (nil until its
	// agent reported any; written only when set): a resume counts on
	// from it.
	Usage *Usage `json:"usage,omitempty"`
	// BudgetTokens is the session's token budget as it was raised (or
	// lowered) at run time; 0 leaves the configured one (written only
	// when set).
	BudgetTokens int64 `json:"budget_tokens,omitempty"`
	// StartHead is the commit that the HEAD of its cwd's checkout was at
	// when a session without isolation started: its change (agent_diff)
	// is the checkout's against it. "" for an isolated session (its
	// worktree has its base), outside git, and in a record written before
	// it existed (written only when set).
	StartHead string `json:"start_head,omitempty"`
	// Host names the host the session's agent runs on, over ssh (a host of
	// the configuration's [plugins.atm-agent-mcp.hosts.<name>]): Cwd,
	// RepoRoot and the worktree are paths there, and the agent's own
	// state (its thread) lives there. "" for this machine (written only
	// when set).
	Host string `json:"host,omitempty"`
	// ForkedFrom is the session this one was forked from (agent_fork):
	// its parent, and how the fork got the parent's history. nil for a
	// session that started on its own (written only when set).
	ForkedFrom *Fork `json:"forked_from,omitempty"`

	// Extra holds the fields this version does not know, so that they
	// survive a rewrite. Keys that collide with a known field are ignored
	// when writing. The raw values are shared by copies of a Session and
	// must not be modified in place.
	Extra map[string]json.RawMessage `json:"-"`
}

// Kind is the session's agent kind: Backend, or DefaultKind for a record
// that names none.
func (s Session) Kind() string {
	if s.Backend == "" {
		return DefaultKind
	}
	return s.Backend
}

// sessionWire is the on-disk form of a Session.
type sessionWire struct {
	AgentID     string      `json:"agent_id"`
	Backend     string      `json:"backend"`
	BackendID   *string     `json:"backend_id"`
	Identity    string      `json:"identity"`
	Team        string      `json:"team"`
	RepoRoot    *string     `json:"repo_root"`
	RepoName    *string     `json:"repo_name"`
	Branch      *string     `json:"branch"`
	Cwd         string      `json:"cwd"`
	StartedAt   time.Time   `json:"started_at"`
	LastActive  time.Time   `json:"last_active"`
	Status      Status      `json:"status"`
	ThreadState ThreadState `json:"thread_state"`
	Tag         *string     `json:"tag"`
	Role        *string     `json:"role"`
	AgentSource *string     `json:"agent_source"`
	Turns       int         `json:"turns"`
	LastResult  *string     `json:"last_result"`
	HandedTo    string      `json:"handed_to,omitempty"`
	Worktree    *Worktree   `json:"worktree,omitempty"`
	Model       string      `json:"model,omitempty"`
	Usage       *Usage      `json:"usage,omitempty"`
	Budget      int64       `json:"budget_tokens,omitempty"`
	StartHead   string      `json:"start_head,omitempty"`
	Host        string      `json:"host,omitempty"`
	ForkedFrom  *Fork       `json:"forked_from,omitempty"`
}

// knownFields are the JSON keys of sessionWire.
var knownFields = map[string]bool{
	"agent_id": true, "backend": true, "backend_id": true, "identity": true,
	"team": true, "repo_root": true, "repo_name": true, "branch": true,
	"cwd": true, "started_at": true, "last_active": true, "status": true,
	"thread_state": true, "tag": true, "role": true, "agent_source": true,
	"turns": true, "last_result": true, "handed_to": true, "worktree": true, "start_head": true,
	"model": true, "usage": true, "budget_tokens": true, "host": true, "forked_from": true,
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// MarshalJSON writes the known fields followed by Extra in key order.
func (s Session) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(sessionWire{
		AgentID:     s.AgentID,
		Backend:     s.Backend,
		BackendID:   nullable(s.BackendID),
		Identity:    s.Identity,
		Team:        s.Team,
		RepoRoot:    nullable(s.RepoRoot),
		RepoName:    nullable(s.RepoName),
		Branch:      nullable(s.Branch),
		Cwd:         s.Cwd,
		StartedAt:   s.StartedAt.UTC(),
		LastActive:  s.LastActive.UTC(),
		Status:      s.Status,
		ThreadState: s.ThreadState,
		Tag:         nullable(s.Tag),
		Role:        nullable(s.Role),
		AgentSource: nullable(s.AgentSource),
		Turns:       s.Turns,
		LastResult:  nullable(s.LastResult),
		HandedTo:    s.HandedTo,
		Worktree:    s.Worktree,
		Model:       s.Model,
		Usage:       s.Usage,
		Budget:      s.BudgetTokens,
		StartHead:   s.StartHead,
		Host:        s.Host,
		ForkedFrom:  s.ForkedFrom,
	})
	if err != nil || len(s.Extra) == 0 {
		return b, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1]) // drop the closing brace
	for _, k := range slices.Sorted(maps.Keys(s.Extra)) {
		if knownFields[k] {
			continue
		}
		v := s.Extra[k]
		if !json.Valid(v) {
			return nil, fmt.Errorf("session %s: extra field %q is not valid JSON", s.AgentID, k)
		}
		key, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the known fields and keeps the others, compacted, in
// Extra.
func (s *Session) UnmarshalJSON(data []byte) error {
	var w sessionWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	var extra map[string]json.RawMessage
	for k, v := range all {
		if knownFields[k] {
			continue
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return err
		}
		extra[k] = c.Bytes()
	}
	*s = Session{
		AgentID:      w.AgentID,
		Backend:      w.Backend,
		BackendID:    deref(w.BackendID),
		Identity:     w.Identity,
		Team:         w.Team,
		RepoRoot:     deref(w.RepoRoot),
		RepoName:     deref(w.RepoName),
		Branch:       deref(w.Branch),
		Cwd:          w.Cwd,
		StartedAt:    w.StartedAt.UTC(),
		LastActive:   w.LastActive.UTC(),
		Status:       w.Status,
		ThreadState:  w.ThreadState,
		Tag:          deref(w.Tag),
		Role:         deref(w.Role),
		AgentSource:  deref(w.AgentSource),
		Turns:        w.Turns,
		LastResult:   deref(w.LastResult),
		HandedTo:     w.HandedTo,
		Worktree:     w.Worktree,
		Model:        w.Model,
		Usage:        w.Usage,
		BudgetTokens: w.Budget,
		Host:         w.Host,
		StartHead:    w.StartHead,
		ForkedFrom:   w.ForkedFrom,
		Extra:        extra,
	}
	return nil
}

// clone returns a copy of s whose Extra map, Worktree and Usage are its
// own.
func (s Session) clone() Session {
	s.Extra = maps.Clone(s.Extra)
	s.Usage = s.Usage.clone()
	if s.Worktree != nil {
		w := *s.Worktree
		s.Worktree = &w
	}
	if s.ForkedFrom != nil {
		f := *s.ForkedFrom
		s.ForkedFrom = &f
	}
	return s
}

// Fork is where a forked session came from: the session it was forked
// from and how it got that session's history.
type Fork struct {
	// AgentID is the parent session.
	AgentID string `json:"agent_id"`
	// Thread is the parent's thread the fork was made from ("" when it
	// had none).
	Thread string `json:"thread,omitempty"`
	// How is how the fork got the parent's history: ForkThread (its agent
	// forked the thread itself), ForkSummary or ForkTranscript (told in
	// its first turn, by an agent that cannot fork).
	How string `json:"how"`
}

// How a fork got its parent's history (Fork.How).
const (
	// ForkThread: the agent started the new thread from the parent's
	// history (Codex app-server's thread/fork).
	ForkThread = "thread"
	// ForkSummary: the new session's first turn is told the parent's
	// saved summary.
	ForkSummary = "summary"
	// ForkTranscript: the new session's first turn is told the parent's
	// recent agent messages and last result.
	ForkTranscript = "transcript"
)

// Worktree is where an isolated session works: a git worktree of its own,
// on a branch of its own, made from the checkout that held its cwd, with a
// block of ports. Its directory, branch and lock are git's (see the
// worktrees command); the record says which one is the session's, so
// that a resume re-enters it.
type Worktree struct {
	// Name is the worktree's name: its directory and its branch end with
	// it.
	Name string `json:"name"`
	// Path is the worktree's root.
	Path string `json:"path"`
	// Branch is its branch ("atm/alice").
	Branch string `json:"branch"`
	// Base is the commit the branch started at.
	Base string `json:"base"`
	// BaseRef is what the base was asked as ("HEAD", "main").
	BaseRef string `json:"base_ref,omitempty"`
	// Source is the checkout it was made from: the lead's.
	Source string `json:"source"`
	// PortBase and PortCount are the block of ports the session was given
	// when it last took the worktree (0 when it has none, and once its
	// close released it); a resume reserves a block anew.
	PortBase  int `json:"port_base,omitempty"`
	PortCount int `json:"port_count,omitempty"`
	// Released says what became of the worktree when its session was
	// closed: "removed" (it held no change: the worktree and its branch
	// are gone) or "kept" (it holds work, unlocked); "" while the session
	// holds it, and after a serve that stopped left it for a resume.
	Released string `json:"released,omitempty"`
	// Stat is the kept worktree's change against its base, as git says
	// it ("2 files changed, 5 insertions(+), 1 deletions(-)").
	Stat string `json:"stat,omitempty"`
}
