package mockacp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// sleeperEnv makes Main the process that spawn starts.
const sleeperEnv = "MOCKACP_SLEEPER"

// Main runs the mock agent on stdin and stdout until stdin ends, and
// returns the exit code.
func Main() int {
	if os.Getenv(sleeperEnv) == "1" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
		time.Sleep(time.Hour)
		return 0
	}
	a := newAgent()
	defer a.stopServers()
	if n, _ := strconv.Atoi(os.Getenv("MOCKACP_GARBAGE")); n > 0 {
		a.garbage(n)
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		a.logLine("<-", sc.Bytes())
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			fmt.Fprintf(os.Stderr, "mockacp: not JSON: %.200s\n", sc.Bytes())
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil:
			a.answered(m)
		case m.Method == "session/cancel":
			a.cancelled(m)
		case m.Method == "session/prompt":
			go a.handle(m) // it waits for answers and cancels, read here
		case m.Method != "" && m.ID != nil:
			a.handle(m) // in order, as the agents do: an answer, then its updates
		}
	}
	return 0
}

// message is any JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// agent is the mock's state.
type agent struct {
	wmu sync.Mutex // one writer of stdout
	log *os.File   // MOCKACP_LOG, or nil

	mu       sync.Mutex
	nextID   int
	calls    map[string]chan message // our requests waiting for answers
	sessions map[string]*session
	state    string // MOCKACP_STATE
}

func newAgent() *agent {
	a := &agent{calls: map[string]chan message{}, sessions: map[string]*session{}, state: os.Getenv("MOCKACP_STATE")}
	if p := os.Getenv("MOCKACP_LOG"); p != "" {
		a.log, _ = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	return a
}

func (a *agent) logLine(dir string, b []byte) {
	if a.log != nil {
		fmt.Fprintf(a.log, "%s %s\n", dir, b)
	}
}

func (a *agent) send(v any) {
	b, _ := json.Marshal(v)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.logLine("->", b)
	os.Stdout.Write(append(b, '\n'))
}

func (a *agent) garbage(n int) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	for i := 0; i < n; i++ {
		fmt.Fprintf(os.Stdout, "this is not json %d\n", i)
	}
}

func (a *agent) reply(id json.RawMessage, result any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *agent) replyErr(id json.RawMessage, code int, msg string) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (a *agent) update(sid string, u map[string]any) {
	a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid, "update": u}})
}

// request sends a request to the client and waits for its answer.
func (a *agent) request(method string, params any) message {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	ch := make(chan message, 1)
	a.calls[strconv.Itoa(id)] = ch
	a.mu.Unlock()
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return <-ch
}

// answered hands the client's answer to the request waiting for it.
func (a *agent) answered(m message) {
	a.mu.Lock()
	ch := a.calls[string(m.ID)]
	delete(a.calls, string(m.ID))
	a.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// cancelled ends the waits of the session's running prompt.
func (a *agent) cancelled(m message) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[p.SessionID]; s != nil && s.cancel != nil {
		close(s.cancel)
		s.cancel = nil
	}
}

// stopServers stops every MCP server the sessions started.
func (a *agent) stopServers() {
	a.mu.Lock()
	var all []mcpCaller
	for _, s := range a.sessions {
		for _, c := range s.servers {
			all = append(all, c)
		}
	}
	a.mu.Unlock()
	for _, c := range all {
		c.stop()
	}
}

// capability reports how a session capability is set by its environment
// variable: "on" (advertised, works), "off", or "fail" (advertised, fails).
func (a *agent) capability(env string) string {
	if a.state == "" {
		return "off"
	}
	switch os.Getenv(env) {
	case "off", "0":
		return "off"
	case "fail":
		return "fail"
	}
	return "on"
}

func (a *agent) initialize(m message) {
	if os.Getenv("MOCKACP_HANG_INIT") == "1" {
		return
	}
	v := 1
	if s := os.Getenv("MOCKACP_VERSION"); s != "" {
		v, _ = strconv.Atoi(s)
	}
	caps := map[string]any{"loadSession": a.capability("MOCKACP_LOAD") != "off", "mcpCapabilities": map[string]any{"http": httpOnly()}}
	sc := map[string]any{}
	if a.capability("MOCKACP_RESUME") != "off" {
		sc["resume"] = map[string]any{}
	}
	if a.state != "" {
		sc["close"] = map[string]any{}
	}
	caps["sessionCapabilities"] = sc
	res := map[string]any{"protocolVersion": v, "agentCapabilities": caps,
		"agentInfo": map[string]any{"name": "mockacp", "version": "1.0.0"}, "authMethods": []any{}}
	if os.Getenv("MOCKACP_STEERING") == "1" {
		// Beside agentCapabilities, as claude-agent-acp advertises it.
		res["_meta"] = map[string]any{"steering": map[string]any{"supported": true}}
	}
	a.reply(m.ID, res)
}
