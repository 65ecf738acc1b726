package mockcodex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

func appUserItem(id, text string, started, completed any) obj {
	return o("type", "userMessage", "id", id, "clientId", nil, "content", []any{o("type", "text", "text", text, "text_elements", []any{})},
		"startedAtMs", started, "completedAtMs", completed)
}

func appAgentItem(id, text string, started, completed any) obj {
	return o("type", "agentMessage", "moderation", nil, "id", id, "text", text, "phase", nil, "memoryCitation", nil,
		"delivery", nil, "questions", nil, "startedAtMs", started, "completedAtMs", completed)
}

func (s *appServer) setStatus(th *appThread, status obj) {
	s.mu.Lock()
	th.status = status
	s.mu.Unlock()
	s.notify("thread/status/changed", o("threadId", th.core.id, "status", status))
}

func appRateLimits() obj {
	return o("rateLimits", o("limitId", "codex", "limitName", nil, "normalModelSlug", nil, "primary", nil, "secondary", nil,
		"credits", nil, "individualLimit", nil, "spendControlReached", nil, "planType", nil, "rateLimitReachedType", nil))
}

func appUsage(n int) obj {
	return o("totalTokens", 132*n, "inputTokens", 120*n, "cachedInputTokens", 0, "cacheWriteInputTokens", 0, "outputTokens", 12*n, "reasoningOutputTokens", 0)
}

// runTurn runs one turn/start and ends it with turn/completed.
func (s *appServer) runTurn(th *appThread, t *appTurn) {
	core, p := th.core, s.p
	p.preTurnFaults(t.text)
	start := time.Now()
	s.setStatus(th, o("type", "active", "activeFlags", []any{}))
	s.notify("turn/started", o("threadId", core.id, "turn", turnObj(t.id, nil, "notLoaded", "inProgress", nil, start.Unix(), nil, nil).with("rootTurnId", t.rootTurn())))
	started := o("type", "task_started", "turn_id", t.id, "root_turn_id", t.id, "started_at", start.Unix(), "model_context_window", 258400, "collaboration_mode_kind", "default")
	core.rollout.event(started)
	core.rollout.add("turn_context", o("turn_id", t.id, "root_turn_id", t.id, "cwd", core.cwd, "approval_policy", core.approvalPolicy, "model", core.model))
	if hangs(t.text) {
		<-p.ctx.Done()
		return
	}
	sk := &appSink{s: s, th: th, t: t}
	var userItems []any
	sk.onUser = func(it obj) { userItems = append(userItems, it) }
	sk.userMessage(t.text)
	s.mu.Lock()
	if th.preview == "" {
		th.preview = t.text
	}
	s.mu.Unlock()
	p.midTurnFaults(t.text)

	env := &turnEnv{p: p, th: core, turnID: t.id, text: t.text, sink: sk, steered: t.steered, spawn: sk.spawnAgent, hasSteer: func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(t.steers) > 0
	}, steer: func() []string {
		s.mu.Lock()
		more := t.steers
		t.steers = nil
		s.mu.Unlock()
		for _, x := range more {
			sk.userMessage(x)
		}
		return more
	}}
	last, err := runTurn(t.ctx, env)
	_ = last
	dur := time.Since(start).Milliseconds()
	var fe *errFailed
	var ie *errInterrupted
	status, view, items := "completed", "summary", t.items
	var terr any
	switch {
	case errors.Is(err, errHung):
		return
	case err == nil:
		s.setStatus(th, o("type", "idle"))
		core.rollout.event(o("type", "task_complete", "root_turn_id", t.id, "turn_id", t.id, "last_agent_message", last,
			"started_at", start.Unix(), "completed_at", time.Now().Unix(), "duration_ms", dur))
	case errors.As(err, &fe):
		msgText := strings.ReplaceAll(fe.message, "We're", "We’re")
		terr = o("message", msgText, "codexErrorInfo", camelInfo(fe.info), "additionalDetails", nil, "misalignment", nil)
		s.setStatus(th, o("type", "systemError"))
		s.notify("error", o("error", terr, "willRetry", false, "threadId", core.id, "turnId", t.id))
		status, view, items = "failed", "notLoaded", nil
		core.rollout.event(o("type", "error", "message", msgText, "codex_error_info", fe.info, "completed_at", time.Now().Unix(), "duration_ms", dur))
	case errors.As(err, &ie):
		if ie.pendingCall != "" {
			s.notify("thread/tokenUsage/updated", sk.usage())
			s.notify("account/rateLimits/updated", appRateLimits())
		}
		s.setStatus(th, o("type", "idle"))
		status, view, items = "interrupted", "notLoaded", nil
		core.rollout.event(o("type", "turn_aborted", "turn_id", t.id, "reason", "interrupted", "started_at", start.Unix(),
			"completed_at", time.Now().Unix(), "duration_ms", dur))
	}
	done := time.Now().Unix()
	s.mu.Lock()
	pending := t.pending
	t.pending = nil
	th.active = nil // the turn is over before turn/completed is sent
	th.history = append(th.history, savedTurn{id: t.id, items: append(userItems, t.items...), status: status,
		startedAt: start.Unix(), completedAt: done, durationMs: dur, err: terr})
	th.updated = done
	s.mu.Unlock()
	s.notify("turn/completed", o("threadId", core.id, "turn", turnObj(t.id, items, view, status, terr, start.Unix(), done, dur).with("rootTurnId", t.rootTurn())))
	if pending != nil {
		s.notify("serverRequest/resolved", o("threadId", core.id, "requestId", *pending))
	}
	p.postTurnFaults(t.text)
}

// appSink turns the steps of a turn into app-server notifications.
type appSink struct {
	s      *appServer
	th     *appThread
	t      *appTurn
	onUser func(obj)
	cmd    map[string]bool // command items already started
}

func (k *appSink) ids() (string, string) { return k.th.core.id, k.t.id }

func (k *appSink) warn(level, target, text string) { k.s.p.logf(level, target, "%s", text) }

func (k *appSink) itemStarted(item obj, at int64) {
	tid, uid := k.ids()
	k.s.notify("item/started", o("item", item, "threadId", tid, "turnId", uid, "startedAtMs", at))
}

func (k *appSink) itemCompleted(item obj, at int64) {
	tid, uid := k.ids()
	k.s.notify("item/completed", o("item", item, "threadId", tid, "turnId", uid, "contentTokenCount", nil, "completedAtMs", at))
}

func (k *appSink) usage() obj {
	tid, uid := k.ids()
	n := max(k.th.core.responses(), 1)
	return o("threadId", tid, "turnId", uid, "tokenUsage", o("total", appUsage(n), "last", appUsage(1), "modelContextWindow", 258400))
}

func (k *appSink) userMessage(text string) {
	k.th.core.say(text)
	now := nowMs()
	id := newUUIDv7()
	k.itemStarted(appUserItem(id, text, now, nil), now)
	done := appUserItem(id, text, now, now)
	k.itemCompleted(done, now)
	k.onUser(done)
	tid, uid := k.ids()
	k.th.core.rollout.add("response_item", o("type", "message", "id", "msg_"+newUUIDv7(), "role", "user", "content", []any{o("type", "input_text", "text", text)}))
	k.th.core.rollout.event(o("type", "item_completed", "thread_id", tid, "turn_id", uid,
		"item", o("type", "UserMessage", "id", id, "content", []any{o("type", "text", "text", text, "text_elements", []any{})}),
		"started_at_ms", now, "completed_at_ms", now))
}

func (k *appSink) message(id, _ string, text string, deltas []string) {
	now := nowMs()
	tid, uid := k.ids()
	k.itemStarted(appAgentItem(id, "", now, nil), now)
	for _, d := range deltas {
		k.s.notify("item/agentMessage/delta", o("threadId", tid, "turnId", uid, "itemId", id, "delta", d))
	}
	done := appAgentItem(id, text, now, nowMs())
	k.itemCompleted(done, nowMs())
	k.t.items = append(k.t.items, done)
	k.s.notify("thread/tokenUsage/updated", k.usage())
	k.s.notify("account/rateLimits/updated", appRateLimits())
	k.th.core.rollout.event(o("type", "item_completed", "thread_id", tid, "turn_id", uid,
		"item", o("type", "AgentMessage", "id", id, "content", []any{o("type", "Text", "text", text)}), "started_at_ms", now, "completed_at_ms", nowMs()))
	k.th.core.rollout.add("response_item", o("type", "message", "status", "completed", "id", id, "role", "assistant",
		"content", []any{o("type", "output_text", "text", text, "annotations", []any{})}))
	k.th.core.rollout.event(o("type", "token_count", "info", k.th.core.tokenInfo(), "rate_limits", rateLimits()))
}

func (k *appSink) functionCall(callID, fcID, _, name, namespace, arguments string) {
	item := o("type", "function_call", "id", fcID, "name", name)
	if namespace != "" {
		item = item.with("namespace", namespace)
	}
	k.th.core.rollout.add("response_item", item.with("arguments", arguments, "call_id", callID))
}

func (k *appSink) toolOutput(callID, output string) {
	k.th.core.rollout.add("response_item", o("type", "function_call_output", "call_id", callID, "output", output))
	k.s.notify("thread/tokenUsage/updated", k.usage())
	k.s.notify("account/rateLimits/updated", appRateLimits())
	k.th.core.rollout.event(o("type", "token_count", "info", k.th.core.tokenInfo(), "rate_limits", rateLimits()))
}

func (k *appSink) cmdItem(e *execCall, status string, pid, source any, code any, dur any, done any) obj {
	return o("type", "commandExecution", "id", e.callID, "pluginId", nil, "scriptPath", nil,
		"command", "/bin/bash -lc '"+e.cmd+"'", "cwd", e.cwd, "processId", pid, "source", source, "status", status,
		"commandActions", []any{o("type", "unknown", "command", e.cmd)}, "aggregatedOutput", nil, "exitCode", code,
		"durationMs", dur, "startedAtMs", e.started, "completedAtMs", done)
}

// ask sends an approval request and waits for the answer; nil when the turn
// was interrupted first (the request id stays pending for the turn's end).
func (k *appSink) ask(ctx context.Context, method string, params obj) *jsonrpcframe.Message {
	ch := make(chan *jsonrpcframe.Message, 1)
	s := k.s
	s.mu.Lock()
	n := s.p.serverRequestID()
	s.pending[n] = ch
	k.t.pending = &n
	s.mu.Unlock()
	s.p.out.send(&jsonrpcframe.Message{ID: jsonrpcframe.IntID(n), Method: method, Params: mustMarshal(params)})
	select {
	case m := <-ch:
		s.mu.Lock()
		k.t.pending = nil
		s.mu.Unlock()
		s.notify("serverRequest/resolved", o("threadId", k.th.core.id, "requestId", n))
		return m
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, n)
		s.mu.Unlock()
		return nil
	}
}

// appDecision parses {"decision": accept|acceptForSession|decline|cancel|
// {acceptWithExecpolicyAmendment}}; errors and other answers fail the item.
func (k *appSink) appDecision(m *jsonrpcframe.Message) decision {
	failed := decision{kind: reject, rejection: "approval request failed", status: "failed"}
	if m.Error != nil {
		k.s.p.logf("ERROR", "codex_app_server", "approval request failed: %s", m.Error)
		return failed
	}
	var r struct {
		Decision json.RawMessage `json:"decision"`
	}
	if json.Unmarshal(m.Result, &r) != nil || r.Decision == nil {
		k.s.p.logf("ERROR", "codex_app_server", "failed to deserialize approval response: missing field `decision`")
		return failed
	}
	var sv string
	if json.Unmarshal(r.Decision, &sv) == nil {
		switch sv {
		case "accept":
			return decision{kind: approve}
		case "acceptForSession":
			return decision{kind: approveSession}
		case "decline":
			return decision{kind: reject, rejection: "rejected by user", status: "declined"}
		case "cancel":
			return decision{kind: abort}
		}
	} else {
		var ov map[string]struct {
			A []string `json:"execpolicy_amendment"`
		}
		if json.Unmarshal(r.Decision, &ov) == nil {
			if a, ok := ov["acceptWithExecpolicyAmendment"]; ok {
				return decision{kind: approveAmendment, amendment: a.A}
			}
			if _, ok := ov["applyNetworkPolicyAmendment"]; ok {
				return decision{kind: approve}
			}
		}
	}
	k.s.p.logf("ERROR", "codex_app_server", "failed to deserialize approval response: unknown variant %s", r.Decision)
	return failed
}

func (k *appSink) execApproval(ctx context.Context, e *execCall) decision {
	tid, uid := k.ids()
	k.s.setStatus(k.th, o("type", "active", "activeFlags", strs("waitingOnApproval")))
	k.itemStarted(k.cmdItem(e, "inProgress", nil, "agent", nil, nil, nil), e.started)
	if k.cmd == nil {
		k.cmd = map[string]bool{}
	}
	k.cmd[e.callID] = true
	fields := e.amendment()
	params := o("kind", "command", "threadId", tid, "turnId", uid, "itemId", e.callID, "startedAtMs", e.started, "environmentId", "local")
	if e.reason != "" {
		params = params.with("reason", e.reason)
	}
	params = params.with("command", "/bin/bash -lc '"+e.cmd+"'", "cwd", e.cwd, "commandActions", []any{o("type", "unknown", "command", e.cmd)},
		"proposedExecpolicyAmendment", strs(fields...),
		"availableDecisions", []any{"accept", o("acceptWithExecpolicyAmendment", o("execpolicy_amendment", strs(fields...))), "cancel"})
	m := k.ask(ctx, "item/commandExecution/requestApproval", params)
	if m == nil {
		return decision{kind: abort}
	}
	d := k.appDecision(m)
	switch d.kind {
	case reject:
		// execRejected completes the item, then the status changes.
	case abort:
		k.itemCompleted(k.cmdItem(e, "declined", nil, "agent", nil, nil, nowMs()), nowMs())
		k.s.setStatus(k.th, o("type", "active", "activeFlags", []any{}))
	default:
		k.s.setStatus(k.th, o("type", "active", "activeFlags", []any{}))
	}
	return d
}

func (k *appSink) execBegin(e *execCall) {
	if !k.cmd[e.callID] {
		k.itemStarted(k.cmdItem(e, "inProgress", nil, "agent", nil, nil, nil), e.started)
	}
}

func (k *appSink) execEnd(e *execCall, r execResult) {
	status := "completed"
	if r.exitCode != 0 {
		status = "failed"
	}
	now := nowMs()
	k.itemCompleted(k.cmdItem(e, status, e.pid, "unifiedExecStartup", r.exitCode, r.duration.Milliseconds(), now), now)
}

func (k *appSink) execRejected(e *execCall, status string) {
	if status == "" {
		status = "declined"
	}
	k.itemCompleted(k.cmdItem(e, status, nil, "agent", nil, nil, nowMs()), nowMs())
	k.s.setStatus(k.th, o("type", "active", "activeFlags", []any{}))
}

func (k *appSink) fileItem(pc *patchCall, status string) obj {
	return o("type", "fileChange", "id", pc.callID, "changes", []any{o("path", pc.abs, "kind", o("type", "add"), "diff", pc.content)}, "status", status)
}

func (k *appSink) patchBegin(pc *patchCall, _ bool) {
	k.itemStarted(k.fileItem(pc, "inProgress"), pc.started)
}

func (k *appSink) patchApproval(ctx context.Context, pc *patchCall) decision {
	tid, uid := k.ids()
	k.s.setStatus(k.th, o("type", "active", "activeFlags", strs("waitingOnApproval")))
	m := k.ask(ctx, "item/fileChange/requestApproval", o("threadId", tid, "turnId", uid, "itemId", pc.callID, "startedAtMs", pc.started, "reason", nil, "grantRoot", nil))
	if m == nil {
		return decision{kind: abort}
	}
	k.s.setStatus(k.th, o("type", "active", "activeFlags", []any{}))
	d := k.appDecision(m)
	if d.kind == abort {
		k.itemCompleted(k.fileItem(pc, "declined"), nowMs())
	}
	return d
}

func (k *appSink) patchEnd(pc *patchCall, ok bool, stdout string) {
	status := "completed"
	if !ok {
		status = "declined"
		if stdout == "" {
			status = "failed"
		}
	}
	k.itemCompleted(k.fileItem(pc, status), nowMs())
	if ok {
		tid, uid := k.ids()
		k.s.notify("turn/diff/updated", o("threadId", tid, "turnId", uid, "diff", unifiedDiff(pc)))
	}
}

func (k *appSink) toolItem(tc *toolCall, status string, result, errv any) obj {
	return o("type", "mcpToolCall", "id", tc.callID, "server", tc.server, "tool", tc.tool, "arguments", tc.arguments,
		"status", status, "result", result, "error", errv, "readOnlyHint", false)
}

func (k *appSink) toolApproval(ctx context.Context, tc *toolCall) decision {
	tid, uid := k.ids()
	m := k.ask(ctx, "mcpServer/elicitation/request", o("threadId", tid, "turnId", uid, "serverName", tc.server, "mode", "form",
		"_meta", o("codex_approval_kind", "mcp_tool_call", "tool_name", tc.tool, "tool_params", tc.arguments),
		"message", fmt.Sprintf("Allow the %s MCP server to run tool %q?", tc.server, tc.tool),
		"requestedSchema", o("type", "object", "properties", obj{})))
	if m == nil {
		return decision{kind: abort}
	}
	var r struct {
		Action string `json:"action"`
	}
	if m.Error == nil && json.Unmarshal(m.Result, &r) == nil && r.Action == "accept" {
		return decision{kind: approve}
	}
	return decision{kind: reject}
}

func (k *appSink) toolBegin(tc *toolCall) {
	k.itemStarted(k.toolItem(tc, "inProgress", nil, nil), tc.started)
}

func (k *appSink) toolEnd(tc *toolCall, result any, isError bool, _ time.Duration) {
	if s, ok := result.(string); ok {
		k.itemCompleted(k.toolItem(tc, "failed", nil, o("message", s)), nowMs())
		return
	}
	status := "completed"
	if isError {
		status = "failed"
	}
	k.itemCompleted(k.toolItem(tc, status, result, nil), nowMs())
}

// modelError: the error notification is sent when the turn ends.
func (k *appSink) modelError(string, string) {}

// spawnAgent starts a sub-agent with the task (SPAWN_SUB), as Codex
// 0.171.0 does for the model's multi_agent_v1.spawn_agent call: the
// collabAgentToolCall item (tool spawnAgent) in progress without receivers,
// a new thread that runs the task as a turn of its own (rootTurnId: this
// turn), the item completed with the thread pendingInit; it returns what
// the model gets back, {"agent_id":…,"nickname":…}.
func (k *appSink) spawnAgent(task string) string {
	s, parent := k.s, k.th.core
	tid, uid := k.ids()
	id := "call_" + newUUIDv7()
	item := func(status string, receivers []any, states obj) obj {
		return o("type", "collabAgentToolCall", "id", id, "tool", "spawnAgent", "status", status, "senderThreadId", tid,
			"receiverThreadIds", receivers, "prompt", task, "model", parent.model, "reasoningEffort", "medium",
			"agentsStates", states, "startedAtMs", nowMs(), "completedAtMs", nil)
	}
	k.itemStarted(item("inProgress", []any{}, obj{}), nowMs())
	core := newThreadCore(newUUIDv7(), parent.cwd, parent.approvalPolicy, parent.sandbox, parent.model)
	core.env = parent.env
	core.rollout = s.p.newRollout(core.id, core.cwd, s.clientName, true)
	th := &appThread{core: core, jobs: make(chan *appTurn, 256), config: k.th.config, created: time.Now().Unix(), updated: time.Now().Unix()}
	s.addThread(th)
	ctx, cancel := context.WithCancel(s.p.ctx)
	th.jobs <- &appTurn{id: newUUIDv7(), text: task, ctx: ctx, cancel: cancel, steered: make(chan struct{}, 1), root: uid}
	k.itemCompleted(item("completed", strs(core.id), o(core.id, o("status", "pendingInit", "message", nil))), nowMs())
	return `{"agent_id":"` + core.id + `","nickname":"Mock"}`
}
