package mockcodex

import (
	"encoding/json"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// threadFork answers thread/fork as 0.171.0 does: a new thread whose
// history is the source's (read from the source's rollout, so that a
// thread of another process forks too), through lastTurnId when given
// ("turn not found: X" otherwise); a turn still running on the source is
// forked as interrupted. Settings not given are the source's cwd and this
// process's defaults; the new thread's rollout holds the history, so it
// resumes as any thread does. The answer is thread/start's, with
// forkedFromId, and thread/started follows.
func (s *appServer) threadFork(id jsonrpcframe.ID, p map[string]json.RawMessage) {
	var tid string
	if json.Unmarshal(p["threadId"], &tid) != nil {
		s.invalid(id, "Invalid request: missing field `threadId`")
		return
	}
	canon, err := parseUUID(tid)
	if err != nil {
		s.invalid(id, "invalid thread id: "+err.Error())
		return
	}
	s.mu.Lock()
	src := s.threads[canon]
	s.mu.Unlock()
	var path string
	if src != nil && src.core.rollout != nil {
		path = src.core.rollout.path
	} else if path, err = s.p.findRollout(canon); err != nil {
		s.invalid(id, err.Error())
		return
	}
	st, err := loadRollout(path)
	if err != nil {
		s.invalid(id, "failed to load rollout `"+path+"`: "+err.Error())
		return
	}
	turns := st.turns
	var last string
	_ = json.Unmarshal(p["lastTurnId"], &last)
	if last != "" {
		i := 0
		for i < len(turns) && turns[i].id != last {
			i++
		}
		if i == len(turns) {
			s.invalid(id, "turn not found: "+last)
			return
		}
		turns = turns[:i+1]
	}
	turns = append([]savedTurn(nil), turns...)
	for i := range turns {
		if turns[i].status == "inProgress" {
			turns[i].status = "interrupted"
		}
	}
	policy, sandbox, cwd, model, cfg, ok := s.threadSettings(id, p)
	if !ok {
		return
	}
	if _, given := p["cwd"]; !given {
		cwd = st.cwd
	}
	core := newThreadCore(newUUIDv7(), cwd, policy, sandbox, model)
	core.env = shellEnv(cfg)
	core.usage = st.responses
	core.said = saidIn(turns)
	if err := s.startServersFor(core, cfg); err != nil {
		s.fail(id, jsonrpcframe.CodeInternalError, "error forking thread: "+err.Error())
		return
	}
	core.rollout = s.p.newRollout(core.id, cwd, s.clientName, true)
	for _, t := range turns {
		writeSavedTurn(core.rollout, core.id, t)
	}
	now := time.Now().Unix()
	th := &appThread{core: core, jobs: make(chan *appTurn, 256), config: cfg, created: now, updated: now, history: turns, forkedFrom: canon}
	if said := core.said; len(said) > 0 {
		th.preview = said[0]
	}
	s.addThread(th)
	s.respond(id, s.startResult(th))
	s.notify("thread/started", o("thread", s.threadObj(th, false)))
}

// writeSavedTurn writes a turn of a history into a rollout as the lines
// loadRollout reads back.
func writeSavedTurn(r *rollout, threadID string, t savedTurn) {
	r.event(o("type", "task_started", "turn_id", t.id, "root_turn_id", t.id, "started_at", t.startedAt))
	for _, it := range t.items {
		m, ok := it.(obj)
		if !ok {
			continue
		}
		var item obj
		switch m[0].v {
		case "userMessage":
			item = o("type", "UserMessage", "id", m.get("id"), "content", []any{o("type", "text", "text", firstText(m), "text_elements", []any{})})
		case "agentMessage":
			item = o("type", "AgentMessage", "id", m.get("id"), "content", []any{o("type", "Text", "text", m.get("text"))})
		default:
			continue
		}
		r.event(o("type", "item_completed", "thread_id", threadID, "turn_id", t.id, "item", item,
			"started_at_ms", m.get("startedAtMs"), "completed_at_ms", m.get("completedAtMs")))
	}
	switch t.status {
	case "completed":
		r.event(o("type", "task_complete", "turn_id", t.id, "completed_at", t.completedAt, "duration_ms", t.durationMs))
	case "failed":
		msg := "the turn failed"
		if e, ok := t.err.(obj); ok {
			if m, ok := e.get("message").(string); ok {
				msg = m
			}
		}
		r.event(o("type", "error", "message", msg, "codex_error_info", "other", "completed_at", t.completedAt))
	default:
		r.event(o("type", "turn_aborted", "turn_id", t.id, "reason", "interrupted", "completed_at", t.completedAt))
	}
}

// orNil is s, or JSON null when it is "".
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
