package acp_test

// The fake ACP agent: the test binary itself, re-executed by TestMain when
// FAKEACP=1. A turn's prompt is its script, one command a line:
//
//	say TEXT          an agent message (two agent_message_chunk, one messageId)
//	think TEXT        an agent_thought_chunk
//	tool ID TITLE     tool_call (pending), then tool_call_update (completed)
//	update-only ID    a tool_call_update of a call never announced (Gemini)
//	ask ID            session/request_permission for tool call ID (in mode
//	                  "default" only; mode "auto" allows by itself), then
//	                  says "selected OPTIONID" or "cancelled"
//	call METHOD       a request of the agent (fs/read_text_file, …); says
//	                  the error it got
//	plan / usage N M  a plan / a usage_update
//	wait              wait for session/cancel
//	crash CODE        write to stderr and exit with CODE
//	garbage N         N lines on stdout that are not JSON-RPC
//	late TEXT         after the prompt's answer, another chunk of the turn's
//	                  last message
//	spawn PIDFILE     start a process that ignores SIGTERM and stdin's end
//	                  (as Gemini's relaunched child), write its pid
//	stop REASON       answer with this stopReason (default end_turn)
//
// The agent's behaviour comes from its environment:
//
//	FAKEACP_HANG_INIT=1       never answer initialize
//	FAKEACP_VERSION=N         answer initialize with protocol version N
//	FAKEACP_OPTIONS=JSON      the permission options it offers (default:
//	                          allow-once and reject, as claude-agent-acp)
//	FAKEACP_STATE=DIR         keep sessions in DIR; advertise load, resume, close
//	FAKEACP_ON_CANCEL=X       answer a cancelled turn with stopReason X
//	                          (cancelled by default), "error" for an error,
//	                          "ignore" not at all
//	FAKEACP_NO_MSGID=1        send no messageId
//	FAKEACP_AUTH=1            offer the auth method "mock-key" and answer
//	                          session/new auth_required until it is used

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type fakeAgent struct {
	wmu    sync.Mutex
	out    *os.File
	mu     sync.Mutex
	nextID int
	calls  map[string]chan fakeMsg  // our requests waiting for answers
	cancel map[string]chan struct{} // running prompt per session
	mode   map[string]string
	seq    int
	state  string
	authed bool
}

type fakeMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func fakeSleeperMain() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	time.Sleep(time.Hour)
	os.Exit(0)
}

func fakeAgentMain() {
	a := &fakeAgent{out: os.Stdout, calls: map[string]chan fakeMsg{}, cancel: map[string]chan struct{}{},
		mode: map[string]string{}, state: os.Getenv("FAKEACP_STATE")}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m fakeMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil:
			a.mu.Lock()
			ch := a.calls[string(m.ID)]
			delete(a.calls, string(m.ID))
			a.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Method == "session/cancel":
			var p struct{ SessionID string }
			_ = json.Unmarshal(m.Params, &p)
			a.mu.Lock()
			if ch := a.cancel[p.SessionID]; ch != nil {
				close(ch)
				delete(a.cancel, p.SessionID)
			}
			a.mu.Unlock()
		case m.Method == "session/prompt":
			go a.handle(m) // it waits for answers and cancels, read here
		case m.Method != "":
			a.handle(m) // in order, as the agents do: an answer, then its updates
		}
	}
	if os.Getenv("FAKEACP_IGNORE_EOF") == "1" {
		select {} // as an agent that outlives its stdin (TestGuard)
	}
	os.Exit(0)
}

func (a *fakeAgent) send(v any) {
	b, _ := json.Marshal(v)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.out.Write(append(b, '\n'))
}

func (a *fakeAgent) reply(id json.RawMessage, result any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *fakeAgent) replyErr(id json.RawMessage, code int, msg string) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (a *fakeAgent) update(sid string, u map[string]any) {
	a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid, "update": u}})
}

// request sends a request to the client and waits for its answer.
func (a *fakeAgent) request(method string, params any) fakeMsg {
	a.mu.Lock()
	a.nextID++
	id := strconv.Itoa(a.nextID)
	ch := make(chan fakeMsg, 1)
	a.calls[id] = ch
	a.mu.Unlock()
	a.send(map[string]any{"jsonrpc": "2.0", "id": a.nextID, "method": method, "params": params})
	return <-ch
}

func (a *fakeAgent) modes(sid string) map[string]any {
	a.mu.Lock()
	cur := a.mode[sid]
	a.mu.Unlock()
	return map[string]any{"currentModeId": cur, "availableModes": []map[string]string{
		{"id": "auto", "name": "Auto"}, {"id": "default", "name": "Default"}}}
}

func (a *fakeAgent) handle(m fakeMsg) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
		Cwd       string `json:"cwd"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "initialize":
		if os.Getenv("FAKEACP_HANG_INIT") == "1" {
			return
		}
		v := 1
		if s := os.Getenv("FAKEACP_VERSION"); s != "" {
			v, _ = strconv.Atoi(s)
		}
		caps := map[string]any{"loadSession": false, "mcpCapabilities": map[string]any{"http": true}}
		if a.state != "" {
			caps["loadSession"] = true
			caps["sessionCapabilities"] = map[string]any{"resume": map[string]any{}, "close": map[string]any{}}
		}
		auth := []any{}
		if os.Getenv("FAKEACP_AUTH") == "1" {
			auth = append(auth, map[string]any{"id": "mock-key", "name": "Mock key"})
		}
		a.reply(m.ID, map[string]any{"protocolVersion": v, "agentCapabilities": caps,
			"agentInfo": map[string]any{"name": "fakeacp", "version": "1.0.0"}, "authMethods": auth})
	case "authenticate":
		var p struct{ MethodID string }
		_ = json.Unmarshal(m.Params, &p)
		if p.MethodID != "mock-key" {
			a.replyErr(m.ID, -32602, "unknown auth method")
			return
		}
		a.authed = true
		a.reply(m.ID, map[string]any{})
	case "session/set_config_option":
		var p struct {
			SessionID, ConfigID string
			Value               any
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.ConfigID != "model" {
			a.replyErr(m.ID, -32602, "unknown config option "+p.ConfigID)
			return
		}
		opts := []any{map[string]any{"id": "model", "name": "Model", "type": "select", "currentValue": p.Value, "options": []any{}}}
		a.reply(m.ID, map[string]any{"configOptions": opts})
		a.update(p.SessionID, map[string]any{"sessionUpdate": "config_option_update", "configOptions": opts})
	case "session/new":
		if os.Getenv("FAKEACP_AUTH") == "1" && !a.authed {
			a.replyErr(m.ID, -32000, "Authentication required")
			return
		}
		a.mu.Lock()
		a.seq++
		sid := fmt.Sprintf("ses_%d_%d", os.Getpid(), a.seq)
		a.mode[sid] = "auto"
		a.mu.Unlock()
		if a.state != "" {
			a.save(sid, nil)
		}
		a.reply(m.ID, map[string]any{"sessionId": sid, "modes": a.modes(sid)})
		// As real agents do, right after the answer.
		a.update(sid, map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{}})
		if len(p.MCPServers) > 2 {
			fmt.Fprintf(os.Stderr, "mcpServers %s\n", p.MCPServers)
		}
	case "session/load", "session/resume":
		hist, ok := a.load(p.SessionID)
		if !ok {
			a.replyErr(m.ID, -32002, "Resource not found: "+p.SessionID)
			return
		}
		a.mu.Lock()
		a.mode[p.SessionID] = "auto"
		a.mu.Unlock()
		if m.Method == "session/load" {
			for _, h := range hist {
				kind := "user_message_chunk"
				if h[0] == "agent" {
					kind = "agent_message_chunk"
				}
				a.update(p.SessionID, map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": h[1]}})
			}
		}
		a.reply(m.ID, map[string]any{"modes": a.modes(p.SessionID)})
	case "session/close":
		a.reply(m.ID, map[string]any{})
	case "session/set_mode":
		a.mu.Lock()
		a.mode[p.SessionID] = p.ModeID
		a.mu.Unlock()
		a.reply(m.ID, map[string]any{})
		a.update(p.SessionID, map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": p.ModeID})
	case "session/prompt":
		text := ""
		for _, b := range p.Prompt {
			text += b.Text
		}
		a.prompt(m.ID, p.SessionID, text)
	default:
		a.replyErr(m.ID, -32601, "Method not found: "+m.Method)
	}
}

func (a *fakeAgent) prompt(id json.RawMessage, sid, script string) {
	cancelled := make(chan struct{})
	a.mu.Lock()
	a.cancel[sid] = cancelled
	a.mu.Unlock()
	stop := "end_turn"
	var said []string
	var late []string
	msgN := 0
	lastID := ""
	noID := os.Getenv("FAKEACP_NO_MSGID") == "1"
	say := func(kind, text string) {
		msgN++
		lastID = fmt.Sprintf("msg-%s-%d-%d", sid, time.Now().UnixNano(), msgN)
		half := len(text) / 2
		for _, part := range []string{text[:half], text[half:]} {
			u := map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": part}}
			if !noID {
				u["messageId"] = lastID
			}
			a.update(sid, u)
		}
		if kind == "agent_message_chunk" {
			said = append(said, text)
		}
	}
	endCancelled := func() {
		switch os.Getenv("FAKEACP_ON_CANCEL") {
		case "ignore":
			select {} // never answers
		case "error":
			a.replyErr(id, -32603, "aborted")
		case "":
			a.reply(id, map[string]any{"stopReason": "cancelled"})
		default:
			a.reply(id, map[string]any{"stopReason": os.Getenv("FAKEACP_ON_CANCEL")})
		}
	}
	for _, line := range strings.Split(script, "\n") {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch cmd {
		case "say":
			say("agent_message_chunk", arg)
		case "think":
			say("agent_thought_chunk", arg)
		case "tool":
			tid, title, _ := strings.Cut(arg, " ")
			a.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": tid, "title": title, "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": title}})
			a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed", "rawOutput": "ok"})
		case "update-only":
			a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": arg, "status": "completed", "title": "send_team_mail"})
		case "ask":
			a.mu.Lock()
			mode := a.mode[sid]
			a.mu.Unlock()
			if mode != "default" {
				say("agent_message_chunk", "ran "+arg+" without asking")
				continue
			}
			var opts any
			if err := json.Unmarshal([]byte(os.Getenv("FAKEACP_OPTIONS")), &opts); err != nil {
				opts = []map[string]string{{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
					{"optionId": "reject", "name": "Reject", "kind": "reject_once"}}
			}
			res := a.request("session/request_permission", map[string]any{"sessionId": sid,
				"toolCall": map[string]any{"toolCallId": arg, "title": "run " + arg, "kind": "execute", "status": "pending"},
				"options":  opts})
			var r struct {
				Outcome struct {
					Outcome  string `json:"outcome"`
					OptionID string `json:"optionId"`
				} `json:"outcome"`
			}
			_ = json.Unmarshal(res.Result, &r)
			if r.Outcome.Outcome == "cancelled" {
				select {
				case <-cancelled:
					endCancelled()
					return
				case <-time.After(5 * time.Second):
				}
				say("agent_message_chunk", "cancelled")
				continue
			}
			say("agent_message_chunk", "selected "+r.Outcome.OptionID)
		case "call":
			res := a.request(arg, map[string]any{"sessionId": sid, "path": "/etc/hostname"})
			say("agent_message_chunk", arg+" answered "+string(res.Error))
		case "plan":
			a.update(sid, map[string]any{"sessionUpdate": "plan", "entries": []map[string]string{{"content": "step one", "priority": "high", "status": "in_progress"}}})
		case "usage":
			var used, size int
			fmt.Sscan(arg, &used, &size)
			a.update(sid, map[string]any{"sessionUpdate": "usage_update", "used": used, "size": size})
		case "wait":
			<-cancelled
			endCancelled()
			return
		case "crash":
			code, _ := strconv.Atoi(arg)
			fmt.Fprintln(os.Stderr, "fakeacp: crashing as told")
			os.Exit(code)
		case "garbage":
			n, _ := strconv.Atoi(arg)
			a.wmu.Lock()
			for i := 0; i < n; i++ {
				fmt.Fprintf(a.out, "this is not json %d\n", i)
			}
			a.wmu.Unlock()
		case "late":
			late = append(late, arg)
		case "spawn":
			exe, _ := os.Executable()
			c := exec.Command(exe)
			c.Env = append(os.Environ(), "FAKEACP_SLEEPER=1")
			if err := c.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "spawn:", err)
				os.Exit(3)
			}
			os.WriteFile(arg, []byte(strconv.Itoa(c.Process.Pid)), 0o644)
		case "stop":
			stop = arg
		}
	}
	if a.state != "" {
		hist, _ := a.load(sid)
		hist = append(hist, [2]string{"user", script})
		for _, s := range said {
			hist = append(hist, [2]string{"agent", s})
		}
		a.save(sid, hist)
	}
	a.mu.Lock()
	delete(a.cancel, sid)
	a.mu.Unlock()
	a.reply(id, map[string]any{"stopReason": stop})
	for _, l := range late {
		a.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "messageId": lastID, "content": map[string]any{"type": "text", "text": l}})
	}
}

func (a *fakeAgent) save(sid string, hist [][2]string) {
	b, _ := json.Marshal(hist)
	os.WriteFile(filepath.Join(a.state, sid+".json"), b, 0o644)
}

func (a *fakeAgent) load(sid string) ([][2]string, bool) {
	b, err := os.ReadFile(filepath.Join(a.state, sid+".json"))
	if err != nil {
		return nil, false
	}
	var h [][2]string
	_ = json.Unmarshal(b, &h)
	return h, true
}
