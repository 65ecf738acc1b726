package mockacp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// turn is one running prompt.
type turn struct {
	a      *agent
	s      *session
	id     json.RawMessage // the prompt's request id
	cancel chan struct{}   // closed by session/cancel
	stop   string
	tokens map[string]any // the answer's usage ("tokens"), nil for none
	said   []string
	late   []string
	msgN   int
	lastID string
	runs   int // run commands so far (their tool call ids)
}

// say sends one message (or thought) as two chunks of one messageId.
func (t *turn) say(kind, text string) {
	t.msgN++
	t.lastID = fmt.Sprintf("msg-%s-%d-%d", t.s.id, time.Now().UnixNano(), t.msgN)
	half := len(text) / 2
	for _, part := range []string{text[:half], text[half:]} {
		u := map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": part}}
		if os.Getenv("MOCKACP_NO_MSGID") != "1" {
			u["messageId"] = t.lastID
		}
		t.a.update(t.s.id, u)
	}
	if kind == "agent_message_chunk" {
		t.said = append(t.said, text)
	}
}

// endCancelled answers a cancelled prompt as MOCKACP_ON_CANCEL says.
func (t *turn) endCancelled() {
	t.record()
	switch v := os.Getenv("MOCKACP_ON_CANCEL"); v {
	case "ignore":
		select {} // never answers
	case "error":
		t.a.replyErr(t.id, -32603, "aborted")
	case "":
		t.a.reply(t.id, map[string]any{"stopReason": "cancelled"})
	default:
		t.a.reply(t.id, map[string]any{"stopReason": v})
	}
}

// record adds the turn's messages to the session's transcript and saves
// it.
func (t *turn) record() {
	t.a.mu.Lock()
	for _, s := range t.said {
		t.s.hist = append(t.s.hist, entry{Role: "agent", Text: s})
	}
	t.said = nil
	if t.s.cancel == t.cancel {
		t.s.cancel = nil
	}
	t.a.mu.Unlock()
	t.a.save(t.s)
}

func (a *agent) prompt(id json.RawMessage, s *session, text string) {
	t := &turn{a: a, s: s, id: id, cancel: make(chan struct{}), stop: "end_turn"}
	a.mu.Lock()
	s.cancel = t.cancel
	s.hist = append(s.hist, entry{Role: "user", Text: text})
	a.mu.Unlock()
	for _, line := range strings.Split(text, "\n") {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		if done := t.run(cmd, arg, text); done {
			return
		}
		t.saySteered()
	}
	t.record()
	answer := map[string]any{"stopReason": t.stop}
	if t.tokens != nil {
		answer["usage"] = t.tokens
	}
	a.reply(id, answer)
	for _, l := range t.late {
		a.update(s.id, map[string]any{"sessionUpdate": "agent_message_chunk", "messageId": t.lastID, "content": map[string]any{"type": "text", "text": l}})
	}
}

// saySteered says the input steered into the turn so far: "steered: TEXT".
func (t *turn) saySteered() {
	t.a.mu.Lock()
	steered := t.s.steered
	t.s.steered = nil
	t.a.mu.Unlock()
	for _, s := range steered {
		t.say("agent_message_chunk", "steered: "+s)
	}
}

// run runs one command of the script; done reports that the prompt was
// answered (or never will be).
func (t *turn) run(cmd, arg, prompt string) (done bool) {
	a, sid := t.a, t.s.id
	switch cmd {
	case "say":
		t.say("agent_message_chunk", arg)
	case "think":
		t.say("agent_thought_chunk", arg)
	case "echo":
		t.say("agent_message_chunk", prompt)
	case "status":
		a.mu.Lock()
		var names []string
		for _, sp := range t.s.specs {
			names = append(names, sp.Name)
		}
		line := fmt.Sprintf("mode=%s model=%s cwd=%s mcp=%s", t.s.mode, t.s.model, t.s.cwd, strings.Join(names, ","))
		a.mu.Unlock()
		t.say("agent_message_chunk", line)
	case "run":
		t.shell(arg)
	case "tool":
		tid, title, _ := strings.Cut(arg, " ")
		a.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": tid, "title": title, "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": title}})
		a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed", "rawOutput": "ok"})
	case "update-only":
		a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": arg, "status": "completed", "title": "send_team_mail"})
	case "ask":
		return t.ask(arg)
	case "mcp":
		t.mcp(arg)
	case "call":
		res := a.request(arg, map[string]any{"sessionId": sid, "path": "/etc/hostname"})
		t.say("agent_message_chunk", arg+" answered "+string(res.Error))
	case "plan":
		a.update(sid, map[string]any{"sessionUpdate": "plan", "entries": []map[string]string{{"content": "step one", "priority": "high", "status": "in_progress"}}})
	case "usage":
		var used, size int
		var amount float64
		var currency string
		n, _ := fmt.Sscan(arg, &used, &size, &amount, &currency)
		u := map[string]any{"sessionUpdate": "usage_update", "used": used, "size": size}
		if n == 4 {
			u["cost"] = map[string]any{"amount": amount, "currency": currency}
		}
		a.update(sid, u)
	case "tokens":
		var in, out, cached int64
		fmt.Sscan(arg, &in, &out, &cached)
		t.tokens = map[string]any{"inputTokens": in, "outputTokens": out, "cachedReadTokens": cached, "totalTokens": in + out}
	case "sleep":
		ms, _ := strconv.Atoi(arg)
		select {
		case <-t.cancel:
			t.endCancelled()
			return true
		case <-time.After(time.Duration(ms) * time.Millisecond):
		}
	case "wait":
		<-t.cancel
		t.endCancelled()
		return true
	case "hang":
		t.record()
		select {}
	case "crash":
		code, _ := strconv.Atoi(arg)
		fmt.Fprintln(os.Stderr, "mockacp: crashing as told")
		os.Exit(code)
	case "garbage":
		n, _ := strconv.Atoi(arg)
		a.garbage(n)
	case "late":
		t.late = append(t.late, arg)
	case "spawn":
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), sleeperEnv+"=1")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mockacp: spawn:", err)
			os.Exit(3)
		}
		if err := os.WriteFile(arg, []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mockacp: spawn:", err)
		}
	case "stop":
		t.stop = arg
	}
	return false
}

// ask sends session/request_permission for tool call "ID [KIND [TITLE]]".
func (t *turn) ask(arg string) (done bool) {
	a := t.a
	fields := strings.SplitN(arg, " ", 3)
	tid, kind, title := fields[0], "execute", "run "+fields[0]
	if len(fields) > 1 {
		kind = fields[1]
	}
	if len(fields) > 2 {
		title = fields[2]
	}
	a.mu.Lock()
	mode := t.s.mode
	a.mu.Unlock()
	if mode != "default" {
		t.say("agent_message_chunk", "ran "+tid+" without asking")
		return false
	}
	var opts any
	if err := json.Unmarshal([]byte(os.Getenv("MOCKACP_OPTIONS")), &opts); err != nil {
		opts = []map[string]string{{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
			{"optionId": "allow-with-updates", "name": "Always allow", "kind": "allow_always"},
			{"optionId": "reject", "name": "Reject", "kind": "reject_once"}}
	}
	call := map[string]any{"toolCallId": tid, "title": title, "kind": kind, "status": "pending"}
	if kind == "execute" {
		call["rawInput"] = map[string]any{"command": title}
	}
	res := a.request("session/request_permission", map[string]any{"sessionId": t.s.id, "toolCall": call, "options": opts})
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(res.Result, &r)
	if r.Outcome.Outcome == "cancelled" {
		select {
		case <-t.cancel:
			t.endCancelled()
			return true
		case <-time.After(5 * time.Second):
		}
		t.say("agent_message_chunk", "cancelled")
		return false
	}
	t.say("agent_message_chunk", "selected "+r.Outcome.OptionID)
	return false
}

// mcp calls a tool of one of the session's MCP servers: "SERVER TOOL
// JSONARGS".
func (t *turn) mcp(arg string) {
	a := t.a
	server, rest, _ := strings.Cut(arg, " ")
	tool, args, _ := strings.Cut(rest, " ")
	tid := fmt.Sprintf("mcp-%d", time.Now().UnixNano())
	a.update(t.s.id, map[string]any{"sessionUpdate": "tool_call", "toolCallId": tid, "title": server + "." + tool, "kind": "other", "status": "in_progress",
		"rawInput": json.RawMessage(orEmpty(args))})
	text, err := a.callTool(t.s, server, tool, args)
	status := "completed"
	if err != nil {
		status, text = "failed", "mcp error: "+err.Error()
	}
	a.update(t.s.id, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": status})
	t.say("agent_message_chunk", text)
}

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" || !json.Valid([]byte(s)) {
		return "{}"
	}
	return s
}

// shell runs a command in the session's cwd with the agent's environment,
// reported as an execute tool call, and says its output.
func (t *turn) shell(command string) {
	a, sid := t.a, t.s.id
	a.mu.Lock()
	cwd := t.s.cwd
	a.mu.Unlock()
	t.runs++
	tid := "run-" + strconv.Itoa(t.runs)
	a.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": tid, "title": command, "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": command}})
	c := exec.Command("sh", "-c", command)
	c.Dir = cwd
	out, err := c.CombinedOutput()
	a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed", "rawOutput": string(out)})
	text := strings.TrimSpace(string(out))
	if err != nil {
		text = "run failed: " + err.Error() + ": " + text
	}
	t.say("agent_message_chunk", text)
}
