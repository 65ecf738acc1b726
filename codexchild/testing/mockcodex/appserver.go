package mockcodex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// appServer speaks codex app-server 0.171.0 (as 0.169.0, where it reads and
// writes; recorded.go holds 0.171.0's method list): no "jsonrpc" member, errors
// with -32600, turn/start answered at once and ended by turn/completed,
// threads persisted in rollouts and resumable by a new process.
//
// Design notes: as in mcpServer, one goroutine reads and routes; each thread
// has a goroutine running its turns in order; answers to our approval
// requests are handed to the waiting turn.
type appServer struct {
	p           *process
	initialized bool   // reader goroutine only
	clientName  string // reader goroutine only, set by initialize

	mu      sync.Mutex
	threads map[string]*appThread
	pending map[int64]chan *jsonrpcframe.Message
}

type appThread struct {
	core    *threadCore
	jobs    chan *appTurn
	config  map[string]any
	created int64

	// guarded by appServer.mu
	active     *appTurn
	forkedFrom string // the source of a forked thread
	history    []savedTurn
	preview    string
	updated    int64
	status     obj
}

type appTurn struct {
	id      string
	text    string
	ctx     context.Context
	cancel  context.CancelFunc
	steers  []string      // guarded by appServer.mu
	steered chan struct{} // buffered 1: turn/steer signals the turn
	root    string        // the parent's turn of a sub-agent's turn (rootTurnId); "" for the turn itself
	pending *int64        // an approval request awaiting an answer (appServer.mu)
	items   []any         // agent messages (turn goroutine)
}

func newAppServer(p *process) *appServer {
	return &appServer{p: p, threads: map[string]*appThread{}, pending: map[int64]chan *jsonrpcframe.Message{}}
}

func (s *appServer) serve(in jsonrpcframe.Reader) { readLoop(s.p, in, "codex_app_server", s.dispatch) }

func (s *appServer) notify(method string, params any) {
	s.p.out.send(&jsonrpcframe.Message{Method: method, Params: mustMarshal(params),
		Extra: map[string]json.RawMessage{"emittedAtMs": mustMarshal(nowMs())}})
}

func (s *appServer) respond(id jsonrpcframe.ID, result any) {
	s.p.out.send(&jsonrpcframe.Message{ID: id, Result: mustMarshal(result)})
}

func (s *appServer) fail(id jsonrpcframe.ID, code int64, text string) {
	m := jsonrpcframe.NewErrorResponse(id, &jsonrpcframe.Error{Code: code, Message: text})
	m.Versioned = false
	s.p.out.send(m)
}

func (s *appServer) invalid(id jsonrpcframe.ID, text string) {
	s.fail(id, jsonrpcframe.CodeInvalidRequest, text)
}

func (s *appServer) dispatch(m *jsonrpcframe.Message) {
	switch m.Kind() {
	case jsonrpcframe.KindNotification:
		return // initialized and others need nothing
	case jsonrpcframe.KindResponse:
		n, _ := m.ID.Int64()
		s.mu.Lock()
		ch := s.pending[n]
		delete(s.pending, n)
		s.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return
	case jsonrpcframe.KindRequest:
	default:
		return
	}
	if m.Method == "initialize" {
		s.initialize(m)
		return
	}
	if !s.initialized {
		s.invalid(m.ID, "Not initialized")
		return
	}
	var p map[string]json.RawMessage
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "thread/start":
		s.threadStart(m.ID, p)
	case "thread/resume":
		s.threadResume(m.ID, p)
	case "thread/fork":
		s.threadFork(m.ID, p)
	case "thread/read":
		if th := s.lookup(m.ID, p); th != nil {
			var inc bool
			_ = json.Unmarshal(p["includeTurns"], &inc)
			if inc {
				s.notify("deprecationNotice", o("summary", "Full-history hydration is deprecated for paginated threads; omit `includeTurns` or set it to `false`, then page with `thread/turns/list` and `thread/items/list`.", "details", nil))
			}
			s.respond(m.ID, o("thread", s.threadObj(th, inc)))
		}
	case "thread/list":
		s.mu.Lock()
		data := []any{}
		for _, th := range s.threads {
			data = append(data, s.threadObjLocked(th, false))
		}
		s.mu.Unlock()
		s.respond(m.ID, o("data", data, "readStates", obj{}, "nextCursor", nil, "backwardsCursor", nil))
	case "thread/archive", "thread/unsubscribe":
		if th := s.lookup(m.ID, p); th != nil {
			if m.Method == "thread/archive" {
				th.core.stopServers()
			}
			s.respond(m.ID, obj{})
		}
	case "turn/start":
		s.turnStart(m.ID, p)
	case "turn/interrupt":
		s.turnInterrupt(m.ID, p)
	case "turn/steer":
		s.turnSteer(m.ID, p)
	case "mcpServerStatus/list":
		data := []any{}
		var tid string
		_ = json.Unmarshal(p["threadId"], &tid)
		s.mu.Lock()
		th := s.threads[tid]
		s.mu.Unlock()
		if th != nil {
			th.core.mu.Lock()
			for _, name := range th.core.order {
				srv := th.core.servers[name]
				tools := obj{}
				srv.mu.Lock()
				for tn := range srv.tools {
					tools = append(tools, kv{tn, o("name", tn)})
				}
				srv.mu.Unlock()
				data = append(data, o("name", name, "tools", tools, "resources", []any{}, "resourceTemplates", []any{}, "authStatus", "unsupported"))
			}
			th.core.mu.Unlock()
		}
		s.respond(m.ID, o("data", data, "nextCursor", nil))
	case "model/list":
		s.respond(m.ID, o("data", []any{o("id", s.p.cfg.model, "model", s.p.cfg.model, "displayName", s.p.cfg.model,
			"description", "mockcodex model", "hidden", false, "isDefault", true)}, "nextCursor", nil))
	case "account/read":
		s.respond(m.ID, o("account", nil, "userId", nil, "requiresOpenaiAuth", false, "workspaceRouting", nil))
	case "config/read":
		s.respond(m.ID, o("config", o("model", s.p.cfg.model, "model_provider", s.p.cfg.modelProvider,
			"approval_policy", s.p.cfg.approvalPolicy, "sandbox_mode", s.p.cfg.sandboxMode), "origins", obj{}, "layers", nil))
	default:
		if strings.Contains(appMethodVariants, "`"+m.Method+"`") {
			s.invalid(m.ID, "mockcodex does not implement "+m.Method)
			return
		}
		s.invalid(m.ID, "Invalid request: unknown variant `"+m.Method+"`, "+appMethodVariants)
	}
}

func (s *appServer) initialize(m *jsonrpcframe.Message) {
	if s.initialized {
		s.invalid(m.ID, "Already initialized")
		return
	}
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.ClientInfo.Name == "" {
		s.invalid(m.ID, "Invalid request: missing field `clientInfo`")
		return
	}
	s.initialized = true
	s.clientName = p.ClientInfo.Name
	s.respond(m.ID, o("userAgent", userAgent(p.ClientInfo.Name, s.p.opts.version, p.ClientInfo.Name, p.ClientInfo.Version),
		"codexHome", s.p.opts.codexHome, "platformFamily", "unix", "platformOs", "linux"))
	s.notify("configWarning", o("summary", "Codex could not find bubblewrap on PATH. Install bubblewrap with your OS package manager. See the sandbox prerequisites: https://developers.openai.com/codex/concepts/sandboxing#prerequisites. Codex will use the bundled bubblewrap in the meantime.", "details", nil))
	s.notify("remoteControl/status/changed", o("status", "disabled", "serverName", "mockcodex", "installationId", newUUIDv7(), "environmentId", nil))
}

// lookup finds the thread of params.threadId, answering the errors itself.
func (s *appServer) lookup(id jsonrpcframe.ID, p map[string]json.RawMessage) *appThread {
	raw, ok := p["threadId"]
	if !ok {
		s.invalid(id, "Invalid request: missing field `threadId`")
		return nil
	}
	var tid string
	if json.Unmarshal(raw, &tid) != nil {
		s.invalid(id, "Invalid request: invalid type: "+serdeType(raw)+", expected a string")
		return nil
	}
	canon, err := parseUUID(tid)
	if err != nil {
		s.invalid(id, "invalid thread id: "+err.Error())
		return nil
	}
	s.mu.Lock()
	th := s.threads[canon]
	s.mu.Unlock()
	if th == nil {
		s.invalid(id, "thread not found: "+canon)
	}
	return th
}

func sandboxObj(mode string) obj {
	switch mode {
	case "danger-full-access":
		return o("type", "dangerFullAccess")
	case "read-only":
		return o("type", "readOnly", "networkAccess", false)
	}
	return o("type", "workspaceWrite", "writableRoots", []any{}, "networkAccess", false, "excludeTmpdirEnvVar", false, "excludeSlashTmp", false)
}

func (s *appServer) threadObj(th *appThread, withTurns bool) obj {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threadObjLocked(th, withTurns)
}

func (s *appServer) threadObjLocked(th *appThread, withTurns bool) obj {
	c := th.core
	turns := []any{}
	if withTurns {
		for _, t := range th.history {
			turns = append(turns, turnObj(t.id, t.items, "full", t.status, t.err, t.startedAt, t.completedAt, t.durationMs))
		}
	}
	status := th.status
	if status == nil {
		status = o("type", "idle")
	}
	path := ""
	if c.rollout != nil {
		path = c.rollout.path
	}
	return o("id", c.id, "environments", []any{o("environmentId", "local", "cwd", c.cwd, "runtimeWorkspaceRoots", strs(c.cwd))},
		"extra", nil, "sessionId", c.id, "forkedFromId", orNil(th.forkedFrom), "attachedToThreadId", nil, "parentThreadId", nil,
		"preview", th.preview, "ephemeral", false, "section", nil, "sectionEnteredAt", nil, "projectId", nil,
		"historyMode", "paginated", "modelProvider", s.p.cfg.modelProvider, "model", c.model, "reasoningEffort", nil,
		"createdAt", th.created, "updatedAt", th.updated, "recencyAt", th.updated, "status", status, "path", path,
		"cwd", c.cwd, "cliVersion", s.p.opts.version, "originator", s.clientName, "source", "vscode",
		"canAcceptDirectInput", true, "threadSource", nil, "agentNickname", nil, "agentRole", nil, "gitInfo", nil,
		"name", nil, "daybreakEnabled", nil, "turns", turns)
}

func turnObj(id string, items []any, view, status string, err, started, completed, dur any) obj {
	if items == nil {
		items = []any{}
	}
	return o("id", id, "rootTurnId", id, "items", items, "itemsView", view, "status", status, "error", err,
		"startedAt", started, "completedAt", completed, "durationMs", dur)
}

// threadSettings reads the thread/start (or resume) params.
func (s *appServer) threadSettings(id jsonrpcframe.ID, p map[string]json.RawMessage) (policy, sandbox, cwd, model string, cfg map[string]any, ok bool) {
	policy, sandbox, model = s.p.cfg.approvalPolicy, s.p.cfg.sandboxMode, s.p.cfg.model
	if raw, has := p["approvalPolicy"]; has && string(raw) != "null" {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			switch v {
			case "untrusted", "on-request", "never":
				policy = v
			default:
				s.invalid(id, "Invalid request: unknown variant `"+v+"`, expected one of `untrusted`, `on-request`, `granular`, `never`")
				return
			}
		} else {
			policy = "on-request" // {granular:{…}}: treated as on-request
		}
	}
	if raw, has := p["sandbox"]; has && string(raw) != "null" {
		var v string
		_ = json.Unmarshal(raw, &v)
		switch v {
		case "read-only", "workspace-write", "danger-full-access":
			sandbox = v
		default:
			s.invalid(id, "Invalid request: unknown variant `"+v+"`, expected one of `read-only`, `workspace-write`, `danger-full-access`")
			return
		}
	}
	wd, _ := os.Getwd()
	cwd = wd
	_ = json.Unmarshal(p["cwd"], &cwd)
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(wd, cwd)
	}
	_ = json.Unmarshal(p["model"], &model)
	var raw map[string]any
	_ = json.Unmarshal(p["config"], &raw)
	cfg = expandConfig(raw)
	return policy, sandbox, filepath.Clean(cwd), model, cfg, true
}

// startServersFor starts the thread's MCP servers with startupStatus
// notifications; a required failure is returned.
func (s *appServer) startServersFor(core *threadCore, cfg map[string]any) error {
	_, _, err := s.p.startServers(core, cfg, func(name string, status obj) {
		var e any
		if v, ok := status[len(status)-1].v.(string); ok && status[len(status)-1].k == "error" {
			e = v
		}
		s.notify("mcpServer/startupStatus/updated", o("threadId", core.id, "name", name, "status", status[0].v, "error", e))
	})
	return err
}

func (s *appServer) threadStart(id jsonrpcframe.ID, p map[string]json.RawMessage) {
	policy, sandbox, cwd, model, cfg, ok := s.threadSettings(id, p)
	if !ok {
		return
	}
	core := newThreadCore(newUUIDv7(), cwd, policy, sandbox, model)
	core.env = shellEnv(cfg)
	if err := s.startServersFor(core, cfg); err != nil {
		s.fail(id, jsonrpcframe.CodeInternalError, "error creating thread: "+err.Error())
		return
	}
	core.rollout = s.p.newRollout(core.id, cwd, s.clientName, true)
	th := &appThread{core: core, jobs: make(chan *appTurn, 256), config: cfg, created: time.Now().Unix(), updated: time.Now().Unix()}
	s.addThread(th)
	s.respond(id, s.startResult(th))
	s.notify("thread/started", o("thread", s.threadObj(th, false)))
}

func (s *appServer) startResult(th *appThread) obj {
	c := th.core
	return o("thread", s.threadObj(th, false), "model", c.model, "modelProvider", s.p.cfg.modelProvider, "serviceTier", nil,
		"disabledPluginIds", []any{}, "cwd", c.cwd, "runtimeWorkspaceRoots", strs(c.cwd), "instructionSources", []any{},
		"approvalPolicy", c.approvalPolicy, "approvalsReviewer", "user", "sandbox", sandboxObj(c.sandbox),
		"activePermissionProfile", nil, "reasoningEffort", nil, "multiAgentMode", "explicitRequestOnly")
}

func (s *appServer) addThread(th *appThread) {
	s.mu.Lock()
	s.threads[th.core.id] = th
	s.mu.Unlock()
	s.p.wg.Add(1)
	go s.worker(th)
}

func (s *appServer) threadResume(id jsonrpcframe.ID, p map[string]json.RawMessage) {
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
	var exclude bool
	_ = json.Unmarshal(p["excludeTurns"], &exclude)
	s.mu.Lock()
	th := s.threads[canon]
	s.mu.Unlock()
	if th == nil {
		path, err := s.p.findRollout(canon)
		if err != nil {
			s.invalid(id, err.Error())
			return
		}
		st, err := loadRollout(path)
		if err != nil {
			s.invalid(id, "failed to load rollout `"+path+"`: "+err.Error())
			return
		}
		policy, sandbox, _, model, cfg, ok := s.threadSettings(id, p)
		if !ok {
			return
		}
		core := newThreadCore(canon, st.cwd, policy, sandbox, model)
		core.env = shellEnv(cfg)
		core.usage = st.responses
		core.said = saidIn(st.turns)
		if err := s.startServersFor(core, cfg); err != nil {
			s.fail(id, jsonrpcframe.CodeInternalError, "error resuming thread: "+err.Error())
			return
		}
		core.rollout = &rollout{path: path, app: true, ordinal: countLines(path)}
		th = &appThread{core: core, jobs: make(chan *appTurn, 256), config: cfg, created: st.created, updated: st.updated, history: st.turns}
		for _, t := range st.turns {
			for _, it := range t.items {
				if m, ok := it.(obj); ok && m[0].v == "userMessage" && th.preview == "" {
					th.preview = firstText(m)
				}
			}
		}
		s.addThread(th)
	}
	if !exclude {
		s.notify("deprecationNotice", o("summary", "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`.", "details", nil))
	}
	s.notify("thread/status/changed", o("threadId", canon, "status", o("type", "idle")))
	s.respond(id, s.startResult(th).with("thread", s.threadObj(th, !exclude)))
}

func firstText(item obj) string {
	if c, ok := item.get("content").([]any); ok && len(c) > 0 {
		if t, ok := c[0].(obj); ok {
			s, _ := t.get("text").(string)
			return s
		}
	}
	return ""
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// inputText joins the text parts of a turn input.
func inputText(raw json.RawMessage) string {
	var in []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &in)
	var parts []string
	for _, x := range in {
		if x.Type == "text" {
			parts = append(parts, x.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (s *appServer) turnStart(id jsonrpcframe.ID, p map[string]json.RawMessage) {
	th := s.lookup(id, p)
	if th == nil {
		return
	}
	if _, ok := p["input"]; !ok {
		s.invalid(id, "Invalid request: missing field `input`")
		return
	}
	ctx, cancel := context.WithCancel(s.p.ctx)
	t := &appTurn{id: newUUIDv7(), text: inputText(p["input"]), ctx: ctx, cancel: cancel, steered: make(chan struct{}, 1)}
	s.notify("warning", o("threadId", th.core.id, "message", strings.Replace(modelWarning, "%s", th.core.model, 1)))
	s.respond(id, o("turn", turnObj(t.id, nil, "notLoaded", "inProgress", nil, nil, nil, nil)))
	select {
	case th.jobs <- t:
	default:
		s.p.logf("ERROR", "codex_app_server", "too many queued turns on thread %s", th.core.id)
	}
}

func (s *appServer) turnInterrupt(id jsonrpcframe.ID, p map[string]json.RawMessage) {
	th := s.lookup(id, p)
	if th == nil {
		return
	}
	var turnID string
	_ = json.Unmarshal(p["turnId"], &turnID)
	s.mu.Lock()
	t := th.active
	s.mu.Unlock()
	if t == nil || turnID != "" && t.id != turnID {
		s.invalid(id, "no active turn to interrupt")
		return
	}
	s.respond(id, obj{})
	t.cancel()
}

func (s *appServer) turnSteer(id jsonrpcframe.ID, p map[string]json.RawMessage) {
	th := s.lookup(id, p)
	if th == nil {
		return
	}
	var expected string
	_ = json.Unmarshal(p["expectedTurnId"], &expected)
	s.mu.Lock()
	t := th.active
	race := t != nil && strings.Contains(t.text, "STEER_RACE")
	if t != nil && !race && (expected == "" || expected == t.id) {
		t.steers = append(t.steers, inputText(p["input"]))
	}
	s.mu.Unlock()
	switch {
	case t == nil:
		s.invalid(id, "no active turn to steer")
	case race:
		// The turn ends before the steer is taken: its model answers now,
		// turn/completed goes out, then the refusal.
		t.signalSteer()
		go func() {
			<-t.ctx.Done()
			s.invalid(id, "no active turn to steer")
		}()
	case expected != "" && expected != t.id:
		s.invalid(id, "expected active turn id `"+expected+"` but found `"+t.id+"`")
	default:
		t.signalSteer()
		s.respond(id, o("turnId", t.id))
	}
}

// rootTurn is the turn's rootTurnId: its own id, or the parent's turn of
// a sub-agent's turn.
func (t *appTurn) rootTurn() string {
	if t.root != "" {
		return t.root
	}
	return t.id
}

// signalSteer tells the turn that turn/steer came (see turnEnv.steered).
func (t *appTurn) signalSteer() {
	select {
	case t.steered <- struct{}{}:
	default:
	}
}

func (s *appServer) worker(th *appThread) {
	defer s.p.wg.Done()
	for {
		select {
		case <-s.p.ctx.Done():
			return
		case t := <-th.jobs:
			s.mu.Lock()
			th.active = t
			s.mu.Unlock()
			s.runTurn(th, t)
			s.mu.Lock()
			th.active = nil
			s.mu.Unlock()
			t.cancel()
		}
	}
}
