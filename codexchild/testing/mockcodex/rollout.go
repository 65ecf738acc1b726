package mockcodex

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// rollout appends a thread's history to
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl in the
// format of the Codex version being mocked (0.153.4 mcp-server: no ordinal;
// 0.169.0 and 0.171.0 app-server: "ordinal" on every line).
type rollout struct {
	path    string
	app     bool
	mu      sync.Mutex
	ordinal int
	f       *os.File // open for appending from the first line on, as Codex's recorder keeps it
}

const baseInstructions = "You are a coding agent running in the Codex CLI (mockcodex)."

func tsUTC(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// newRollout creates the file and writes its session_meta line.
func (p *process) newRollout(id, cwd, originator string, app bool) *rollout {
	now := time.Now()
	local := now.Local()
	dir := filepath.Join(p.opts.codexHome, "sessions", local.Format("2006"), local.Format("01"), local.Format("02"))
	r := &rollout{path: filepath.Join(dir, "rollout-"+local.Format("2006-01-02T15-04-05")+"-"+id+".jsonl"), app: app}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		p.logf("WARN", "codex_core::rollout", "cannot create %s: %v", dir, err)
	}
	var meta obj
	if app {
		meta = o("account_scoped", true, "session_id", id, "id", id, "timestamp", tsUTC(now), "cwd", cwd,
			"runtime_workspace_roots", strs(cwd), "originator", originator, "cli_version", p.opts.version,
			"source", "vscode", "model_provider", p.cfg.modelProvider, "base_instructions", o("text", baseInstructions),
			"history_mode", "paginated", "context_window", o("window_id", newUUIDv7()))
	} else {
		meta = o("session_id", id, "id", id, "timestamp", tsUTC(now), "cwd", cwd, "originator", originator,
			"cli_version", p.opts.version, "source", "mcp", "model_provider", p.cfg.modelProvider,
			"base_instructions", o("text", baseInstructions), "history_mode", "legacy",
			"context_window", o("window_id", newUUIDv7()))
	}
	r.add("session_meta", meta)
	return r
}

// add appends one line; errors are ignored (Codex keeps running too).
func (r *rollout) add(typ string, payload any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	line := o("timestamp", tsUTC(time.Now()))
	if r.app {
		line = line.with("ordinal", r.ordinal)
		r.ordinal++
	}
	line = line.with("type", typ, "payload", payload)
	b, err := marshal(line)
	if err != nil {
		return
	}
	if r.f == nil {
		if r.f, err = os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			r.f = nil
			return
		}
	}
	_, _ = r.f.Write(append(b, '\n'))
}

// event appends an event_msg line.
func (r *rollout) event(msg obj) { r.add("event_msg", msg) }

// findRollout returns the rollout file of thread id.
func (p *process) findRollout(id string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(p.opts.codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(matches) == 0 {
		return "", fmt.Errorf("no rollout found for thread id %s", id)
	}
	return matches[len(matches)-1], nil
}

// savedThread is what a rollout tells about a thread.
type savedThread struct {
	path       string
	cwd        string
	originator string
	created    int64
	updated    int64
	turns      []savedTurn
	responses  int
}

type savedTurn struct {
	id          string
	items       []any // app-server ThreadItems
	status      string
	startedAt   any
	completedAt any
	durationMs  any
	err         any
}

// loadRollout reads a rollout back (the lines this mock writes, which are
// the lines real Codex writes for the same turns).
func loadRollout(path string) (*savedThread, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := &savedThread{path: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var cur *savedTurn
	for sc.Scan() {
		var line struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		p := line.Payload
		if line.Type == "session_meta" {
			st.cwd, _ = p["cwd"].(string)
			st.originator, _ = p["originator"].(string)
			if ts, ok := p["timestamp"].(string); ok {
				if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
					st.created, st.updated = t.Unix(), t.Unix()
				}
			}
			continue
		}
		if line.Type != "event_msg" {
			continue
		}
		switch p["type"] {
		case "task_started":
			id, _ := p["turn_id"].(string)
			st.turns = append(st.turns, savedTurn{id: id, status: "inProgress", startedAt: p["started_at"]})
			cur = &st.turns[len(st.turns)-1]
		case "item_completed":
			if cur == nil {
				continue
			}
			item, _ := p["item"].(map[string]any)
			if it := appItemFromCore(item); it != nil {
				cur.items = append(cur.items, it)
			}
		case "token_count":
			st.responses++
		case "task_complete", "turn_aborted", "error":
			if cur == nil {
				continue
			}
			switch p["type"] {
			case "task_complete":
				cur.status = "completed"
			case "turn_aborted":
				cur.status = "interrupted"
			default:
				cur.status = "failed"
				cur.err = o("message", p["message"], "codexErrorInfo", camelInfo(fmt.Sprint(p["codex_error_info"])), "additionalDetails", nil, "misalignment", nil)
			}
			cur.completedAt, cur.durationMs = p["completed_at"], p["duration_ms"]
			if n, ok := p["completed_at"].(float64); ok {
				st.updated = int64(n)
			}
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if st.cwd == "" {
		return nil, errors.New("rollout has no session_meta")
	}
	return st, nil
}

// appItemFromCore converts a core item (item_completed payload) into an
// app-server ThreadItem.
func appItemFromCore(item map[string]any) any {
	switch item["type"] {
	case "UserMessage":
		text := ""
		if c, ok := item["content"].([]any); ok && len(c) > 0 {
			if m, ok := c[0].(map[string]any); ok {
				text, _ = m["text"].(string)
			}
		}
		return appUserItem(fmt.Sprint(item["id"]), text, item["started_at_ms"], item["completed_at_ms"])
	case "AgentMessage":
		text := ""
		if c, ok := item["content"].([]any); ok && len(c) > 0 {
			if m, ok := c[0].(map[string]any); ok {
				text, _ = m["text"].(string)
			}
		}
		return appAgentItem(fmt.Sprint(item["id"]), text, item["started_at_ms"], item["completed_at_ms"])
	}
	return nil
}

func camelInfo(s string) string {
	switch s {
	case "internal_server_error":
		return "internalServerError"
	}
	return s
}
