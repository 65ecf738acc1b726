// Package rollout reads Codex's session rollouts
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl)
// for session discovery: every Codex session on the machine, also the ones a
// person started in a terminal, in the formats of Codex 0.104, 0.153 and
// 0.169 (0.171 writes the same records).
package rollout

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Session is one rollout.
type Session struct {
	ThreadID    string    `json:"thread_id"`
	Path        string    `json:"path"`
	Timestamp   time.Time `json:"timestamp"`
	Cwd         string    `json:"cwd"`
	Source      string    `json:"source"` // mcp, exec, cli, vscode (app-server), …
	Originator  string    `json:"originator"`
	CLIVersion  string    `json:"cli_version"`
	FirstPrompt string    `json:"first_prompt"`
}

// Message is a user or assistant message of a rollout.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Filter selects sessions. Zero values select everything.
type Filter struct {
	// Cwd keeps sessions whose cwd is this directory or inside it.
	Cwd string
	// Limit keeps the newest Limit sessions; 0 means all.
	Limit int
}

var nameRE = regexp.MustCompile(`^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-([0-9a-fA-F-]{36})\.jsonl$`)

// Home returns $CODEX_HOME, else ~/.codex.
func Home() string {
	if h := strings.TrimSpace(os.Getenv("CODEX_HOME")); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".codex"
	}
	return filepath.Join(home, ".codex")
}

// List returns the sessions under codexHome/sessions, newest first. Files
// that cannot be read are skipped.
func List(codexHome string, f Filter) ([]Session, error) {
	root := filepath.Join(codexHome, "sessions")
	var out []Session
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return fs.SkipAll
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		m := nameRE.FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		s, err := readMeta(path, m[1])
		if err != nil {
			return nil
		}
		if f.Cwd != "" && !within(s.Cwd, f.Cwd) {
			return nil
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.After(out[j].Timestamp) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func within(dir, parent string) bool {
	dir, parent = filepath.Clean(dir), filepath.Clean(parent)
	return dir == parent || strings.HasPrefix(dir, parent+string(filepath.Separator))
}

// Find returns the rollout of a thread.
func Find(codexHome, threadID string) (Session, error) {
	all, err := List(codexHome, Filter{})
	if err != nil {
		return Session{}, err
	}
	for _, s := range all {
		if strings.EqualFold(s.ThreadID, threadID) {
			return s, nil
		}
	}
	return Session{}, fs.ErrNotExist
}

type line struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type meta struct {
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Cwd        string `json:"cwd"`
	Originator string `json:"originator"`
	CLIVersion string `json:"cli_version"`
	Source     any    `json:"source"`
}

type responseItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// readMeta reads the first line (session_meta) and the first user prompt.
func readMeta(path, threadID string) (Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	s := Session{ThreadID: threadID, Path: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	first := true
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if first {
			first = false
			if l.Type != "session_meta" {
				return Session{}, errors.New("rollout: no session_meta")
			}
			var m meta
			if err := json.Unmarshal(l.Payload, &m); err != nil {
				return Session{}, err
			}
			s.Cwd, s.Originator, s.CLIVersion = m.Cwd, m.Originator, m.CLIVersion
			s.Source = sourceString(m.Source)
			ts := m.Timestamp
			if ts == "" {
				ts = l.Timestamp
			}
			s.Timestamp, _ = time.Parse(time.RFC3339Nano, ts)
			continue
		}
		if msg, ok := message(l); ok && msg.Role == "user" {
			s.FirstPrompt = msg.Text
			break
		}
	}
	if first {
		return Session{}, errors.New("rollout: empty")
	}
	return s, nil
}

func sourceString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		for k := range t {
			return k
		}
	}
	return ""
}

// contextPrefixes mark the user messages Codex injects itself.
var contextPrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions", "<skills_instructions>", "<INSTRUCTIONS>"}

// message turns a response_item line into a user or assistant message,
// leaving out Codex's own context messages.
func message(l line) (Message, bool) {
	if l.Type != "response_item" {
		return Message{}, false
	}
	var it responseItem
	if json.Unmarshal(l.Payload, &it) != nil || it.Type != "message" || (it.Role != "user" && it.Role != "assistant") {
		return Message{}, false
	}
	var b strings.Builder
	for _, c := range it.Content {
		b.WriteString(c.Text)
	}
	text := strings.TrimSpace(b.String())
	for _, p := range contextPrefixes {
		if strings.HasPrefix(text, p) {
			return Message{}, false
		}
	}
	return Message{Role: it.Role, Text: text}, text != ""
}

// Messages returns the user and assistant messages of a rollout, oldest
// first; with last > 0 only the last ones.
func Messages(path string, last int) ([]Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []Message
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if m, ok := message(l); ok {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if last > 0 && len(out) > last {
		out = out[len(out)-last:]
	}
	return out, nil
}
