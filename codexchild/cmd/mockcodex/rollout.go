package main

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// rollout appends a thread's history to
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl in the
// format of the Codex version being mocked (0.153.4 mcp-server: no ordinal;
// 0.169.0 app-server: "ordinal" on every line).
type rollout struct {
	path    string
	app     bool
	mu      sync.Mutex
	ordinal int
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
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n'))
}

// event appends an event_msg line.
func (r *rollout) event(msg obj) { r.add("event_msg", msg) }
