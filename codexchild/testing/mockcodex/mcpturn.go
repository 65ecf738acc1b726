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

const modelWarning = "Model metadata for `%s` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."

// emit sends one codex/event for the call. In stale-listener mode the events
// alternate between the stale (cancelled) request id and this one.
func (s *mcpServer) emit(c *mcpCall, id string, msg obj) {
	reqID := c.id
	if c.staleID != nil {
		c.evN++
		if c.evN%2 == 1 {
			reqID = *c.staleID
		}
	}
	params := o("_meta", o("requestId", reqID.Raw(), "threadId", c.th.core.id), "id", id, "msg", msg)
	n, err := jsonrpcframe.NewNotification("codex/event", mustMarshal(params))
	if err == nil {
		s.p.out.send(n)
	}
}

func rateLimits() obj {
	return o("limit_id", "codex", "limit_name", nil, "primary", nil, "secondary", nil, "credits", nil,
		"individual_limit", nil, "spend_control_reached", nil, "plan_type", nil, "rate_limit_reached_type", nil)
}

func permissionProfile(sandbox, cwd string) any {
	switch sandbox {
	case "danger-full-access":
		return o("type", "disabled")
	case "read-only":
		return o("type", "managed", "file_system", o("type", "restricted", "entries", []any{
			o("path", o("type", "special", "value", o("kind", "root")), "access", "read")}), "network", "restricted")
	}
	skip := func(p string) obj {
		return o("path", o("type", "path", "path", p), "access", "read", "missing_path_behavior", "skip")
	}
	return o("type", "managed", "file_system", o("type", "restricted", "entries", []any{
		o("path", o("type", "special", "value", o("kind", "root")), "access", "read"),
		o("path", o("type", "path", "path", cwd), "access", "write"),
		o("path", o("type", "special", "value", o("kind", "slash_tmp")), "access", "write"),
		o("path", o("type", "special", "value", o("kind", "tmpdir")), "access", "write"),
		skip(cwd + "/.git"), skip(cwd + "/.agents"), skip(cwd + "/.codex"),
	}), "network", "restricted")
}

// startServers starts the thread's MCP servers. It returns the names that
// became ready, the failures, and an error when a required one failed.
func (p *process) startServers(core *threadCore, cfg map[string]any, update func(name string, status obj)) (ready []string, failed []any, err error) {
	type res struct {
		sc  serverConfig
		srv *toolServer
		err error
	}
	scs := serverConfigs(cfg)
	results := make(chan res, len(scs))
	for _, sc := range scs {
		update(sc.name, o("state", "starting"))
		go func(sc serverConfig) {
			srv, err := p.startToolServer(sc, core.cwd)
			results <- res{sc, srv, err}
		}(sc)
	}
	byName := map[string]res{}
	for range scs {
		r := <-results
		byName[r.sc.name] = r
	}
	var reqFail []string
	for _, sc := range scs {
		r := byName[sc.name]
		if r.err != nil {
			update(sc.name, o("state", "failed", "error", r.err.Error()))
			failed = append(failed, o("server", sc.name, "error", r.err.Error()))
			if sc.required {
				reqFail = append(reqFail, sc.name+": "+r.err.Error())
			}
			continue
		}
		update(sc.name, o("state", "ready"))
		ready = append(ready, sc.name)
		core.mu.Lock()
		core.servers[sc.name] = r.srv
		core.order = append(core.order, sc.name)
		core.mu.Unlock()
	}
	if len(reqFail) > 0 {
		core.stopServers()
		return ready, failed, fmt.Errorf("required MCP servers failed to initialize: %s", strings.Join(reqFail, "; "))
	}
	return ready, failed, nil
}

// runCall runs one tools/call (codex or codex-reply) on its thread.
func (s *mcpServer) runCall(c *mcpCall) {
	th := c.th
	core := th.core
	p := s.p
	p.preTurnFaults(c.prompt)

	mode := p.getenv("MOCKCODEX_STALE_LISTENER")
	s.mu.Lock()
	if th.stale != nil && (mode == "1" || mode == "split") {
		c.staleID, c.staleMode = th.stale, mode
	}
	th.stale = nil
	s.mu.Unlock()

	if c.first {
		var updates []obj
		ready, failed, err := p.startServers(core, th.config, func(name string, status obj) {
			updates = append(updates, o("type", "mcp_startup_update", "server", name, "status", status))
		})
		if err != nil {
			s.mu.Lock()
			delete(s.threads, core.id)
			s.mu.Unlock()
			s.result(c, errorResult("Failed to start Codex session: error creating thread: "+err.Error()))
			return
		}
		core.rollout = p.newRollout(core.id, core.cwd, "codex_cli_rs", false)
		s.emit(c, "", o("type", "session_configured", "session_id", core.id, "thread_id", core.id,
			"model", core.model, "model_provider_id", p.cfg.modelProvider, "approval_policy", core.approvalPolicy,
			"approvals_reviewer", "user", "permission_profile", permissionProfile(core.sandbox, core.cwd),
			"cwd", core.cwd, "rollout_path", core.rollout.path))
		for _, u := range updates {
			s.emit(c, "", u)
		}
		s.emit(c, "", o("type", "mcp_startup_complete", "ready", strs(ready...), "failed", append([]any{}, failed...), "cancelled", []any{}))
	}

	turnID := newUUIDv7()
	start := time.Now()
	sk := &mcpSink{s: s, c: c, turnID: turnID}
	s.emit(c, turnID, o("type", "warning", "message", fmt.Sprintf(modelWarning, core.model)))
	p.logf("WARN", "codex_models_manager::model_info", "Unknown model %s is used. This will use fallback model metadata.", core.model)
	started := o("type", "task_started", "turn_id", turnID, "started_at", start.Unix(), "model_context_window", 258400, "collaboration_mode_kind", "default")
	s.emit(c, turnID, started)
	core.rollout.event(started)
	core.rollout.add("turn_context", o("turn_id", turnID, "root_turn_id", turnID, "cwd", core.cwd, "approval_policy", core.approvalPolicy, "model", core.model))
	if hangs(c.prompt) {
		<-p.ctx.Done()
		return
	}
	if c.first {
		s.emit(c, turnID, o("type", "raw_response_item", "item", o("type", "message", "id", "msg_"+newUUIDv7(), "role", "developer",
			"content", []any{o("type", "input_text", "text", "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. `sandbox_mode` is `"+core.sandbox+"`.\n</permissions instructions>")},
			"internal_chat_message_metadata_passthrough", o("turn_id", turnID, "create_time", float64(time.Now().UnixMicro())/1e6, "content_item_kinds", strs("permissions.instructions")))))
		s.emit(c, turnID, o("type", "raw_response_item", "item", o("type", "message", "id", "msg_"+newUUIDv7(), "role", "user",
			"content", []any{o("type", "input_text", "text", environmentContext(core.cwd))},
			"internal_chat_message_metadata_passthrough", o("turn_id", turnID, "create_time", float64(time.Now().UnixMicro())/1e6, "content_item_kinds", strs("environments.environment_context")))))
	}
	userItem := o("type", "message", "id", "msg_"+newUUIDv7(), "role", "user", "content", []any{o("type", "input_text", "text", c.prompt)},
		"internal_chat_message_metadata_passthrough", o("turn_id", turnID, "create_time", float64(time.Now().UnixMicro())/1e6, "content_item_kinds", strs("user.text")))
	s.emit(c, turnID, o("type", "raw_response_item", "item", userItem))
	core.rollout.add("response_item", userItem)
	sk.userMessage(c.prompt)
	p.midTurnFaults(c.prompt)

	env := &turnEnv{p: p, th: core, turnID: turnID, text: c.prompt, sink: sk}
	last, err := runTurn(c.ctx, env)
	var fe *errFailed
	var ie *errInterrupted
	switch {
	case err == nil:
		done := o("type", "task_complete", "turn_id", turnID, "last_agent_message", last, "started_at", start.Unix(),
			"completed_at", time.Now().Unix(), "duration_ms", time.Since(start).Milliseconds(), "time_to_first_token_ms", time.Since(start).Milliseconds())
		s.emit(c, turnID, done)
		core.rollout.event(done)
		s.result(c, okResult(last, core.id))
		p.postTurnFaults(c.prompt)
	case errors.As(err, &fe):
		core.rollout.event(o("type", "error", "message", fe.message, "codex_error_info", fe.info))
		s.result(c, errorResultThread(fe.message, core.id))
	case errors.As(err, &ie):
		if ie.pendingCall != "" {
			sk.toolOutput(ie.pendingCall, textAborted)
		} else {
			s.emit(c, turnID, o("type", "token_count", "info", core.tokenInfo(), "rate_limits", rateLimits()))
		}
		s.emit(c, turnID, o("type", "raw_response_item", "item", o("type", "message", "id", "msg_"+newUUIDv7(), "role", "user",
			"content", []any{o("type", "input_text", "text", textTurnAbortedContext)},
			"internal_chat_message_metadata_passthrough", o("turn_id", turnID, "create_time", float64(time.Now().UnixMicro())/1e6, "content_item_kinds", strs("generic.turn_aborted")))))
		ab := o("type", "turn_aborted", "turn_id", turnID, "reason", "interrupted", "started_at", start.Unix(),
			"completed_at", time.Now().Unix(), "duration_ms", time.Since(start).Milliseconds())
		s.emit(c, turnID, ab)
		core.rollout.event(ab)
		// The stale-listener bug: the cancelled request's loop keeps
		// listening on the thread. It is never answered.
		s.mu.Lock()
		id := c.id
		th.stale = &id
		s.mu.Unlock()
	}
}

// result sends the tools/call result, to the stale id in stale mode "1".
func (s *mcpServer) result(c *mcpCall, r obj) {
	id := c.id
	if c.staleID != nil && c.staleMode == "1" {
		id = *c.staleID
	}
	s.respond(id, r)
}

func environmentContext(cwd string) string {
	return "<environment_context>\n  <cwd>" + cwd + "</cwd>\n  <shell>bash</shell>\n  <current_date>" +
		time.Now().Format("2006-01-02") + "</current_date>\n  <timezone>Etc/UTC</timezone>\n</environment_context>"
}

// mcpSink turns the steps of a turn into codex/event notifications.
type mcpSink struct {
	s      *mcpServer
	c      *mcpCall
	turnID string
}

func (k *mcpSink) th() *threadCore { return k.c.th.core }

func (k *mcpSink) ev(msg obj) { k.s.emit(k.c, k.turnID, msg) }

func (k *mcpSink) warn(level, target, text string) { k.s.p.logf(level, target, "%s", text) }

func (k *mcpSink) userMessage(text string) {
	k.th().say(text)
	now := nowMs()
	item := o("type", "UserMessage", "id", newUUIDv7(), "content", []any{o("type", "text", "text", text, "text_elements", []any{})})
	k.ev(o("type", "item_started", "thread_id", k.th().id, "turn_id", k.turnID, "item", item, "started_at_ms", now))
	done := o("type", "item_completed", "thread_id", k.th().id, "turn_id", k.turnID, "item", item, "started_at_ms", now, "completed_at_ms", now)
	k.ev(done)
	um := o("type", "user_message", "message", text, "images", []any{}, "local_images", []any{}, "audio", []any{}, "local_audio", []any{}, "text_elements", []any{})
	k.ev(um)
	k.th().rollout.event(um)
	k.th().rollout.event(done)
}

func (k *mcpSink) message(id, respID, text string, deltas []string) {
	now := nowMs()
	k.ev(o("type", "item_started", "thread_id", k.th().id, "turn_id", k.turnID,
		"item", o("type", "AgentMessage", "id", id, "content", []any{o("type", "Text", "text", "")}), "started_at_ms", now))
	for _, d := range deltas {
		k.ev(o("type", "agent_message_content_delta", "thread_id", k.th().id, "turn_id", k.turnID, "item_id", id, "delta", d))
	}
	done := o("type", "item_completed", "thread_id", k.th().id, "turn_id", k.turnID,
		"item", o("type", "AgentMessage", "id", id, "content", []any{o("type", "Text", "text", text)}), "started_at_ms", now, "completed_at_ms", nowMs())
	k.ev(done)
	am := o("type", "agent_message", "message", text, "phase", nil, "memory_citation", nil)
	k.ev(am)
	item := o("type", "message", "id", id, "role", "assistant", "content", []any{o("type", "output_text", "text", text)},
		"internal_chat_message_metadata_passthrough", o("turn_id", k.turnID, "content_item_kinds", strs("unknown")))
	k.ev(o("type", "raw_response_item", "item", item))
	k.completed(respID)
	tc := o("type", "token_count", "info", k.th().tokenInfo(), "rate_limits", rateLimits())
	k.ev(tc)
	k.th().rollout.event(am)
	k.th().rollout.event(done)
	k.th().rollout.add("response_item", item)
	k.th().rollout.event(tc)
}

func (k *mcpSink) completed(respID string) {
	k.ev(o("type", "raw_response_completed", "response_id", respID, "token_usage", usageObj(1),
		"usage_metadata", o("amount", nil, "metadata", o("input_tokens", 120, "input_tokens_details", o("cached_tokens", 0),
			"output_tokens", 12, "output_tokens_details", o("reasoning_tokens", 0), "total_tokens", 132))))
}

func (k *mcpSink) functionCall(callID, fcID, respID, name, namespace, arguments string) {
	item := o("type", "function_call", "id", fcID, "name", name)
	if namespace != "" {
		item = item.with("namespace", namespace)
	}
	item = item.with("arguments", arguments, "call_id", callID, "internal_chat_message_metadata_passthrough", o("turn_id", k.turnID))
	k.ev(o("type", "raw_response_item", "item", item))
	k.th().rollout.add("response_item", item)
	k.completed(respID)
}

func (k *mcpSink) toolOutput(callID, output string) {
	item := o("type", "function_call_output", "id", "fco_"+newUUIDv7(), "call_id", callID, "output", output,
		"internal_chat_message_metadata_passthrough", o("turn_id", k.turnID, "create_time", float64(time.Now().UnixMicro())/1e6))
	k.ev(o("type", "raw_response_item", "item", item))
	k.th().rollout.add("response_item", item)
	k.ev(o("type", "token_count", "info", k.th().tokenInfo(), "rate_limits", rateLimits()))
}

func parsedCmd(cmd string) []any { return []any{o("type", "unknown", "cmd", cmd)} }

// elicit sends elicitation/create and waits for the answer; nil when the
// turn was cancelled first.
func (k *mcpSink) elicit(ctx context.Context, callID string, params obj) *jsonrpcframe.Message {
	p := k.s.p
	n := p.serverRequestID()
	ch := make(chan *jsonrpcframe.Message, 1)
	k.s.mu.Lock()
	k.s.pending[n] = &pendingElicitation{callID: callID, ch: ch}
	k.s.mu.Unlock()
	req, err := jsonrpcframe.NewRequest(jsonrpcframe.IntID(n), "elicitation/create", mustMarshal(params))
	if err != nil {
		return nil
	}
	p.out.send(req)
	select {
	case m := <-ch:
		return m
	case <-ctx.Done():
		k.s.mu.Lock()
		if pe := k.s.pending[n]; pe != nil {
			pe.ch = nil // a late answer is logged and ignored
		}
		k.s.mu.Unlock()
		return nil
	}
}

var reviewDecisionVariants = []string{"approved", "approved_execpolicy_amendment", "approved_for_session",
	"approved_mcp_policy_amendment", "network_policy_amendment", "denied", "timed_out", "abort"}

// mcpDecision parses an elicitation answer like 0.153.4: a top-level
// "decision" ReviewDecision; anything else is a deserialize error, which
// counts as not approved.
func (k *mcpSink) mcpDecision(m *jsonrpcframe.Message, what string) decision {
	p := k.s.p
	if m.Error != nil {
		p.logf("ERROR", "codex_mcp_server::message_processor", "<- error: JsonRpcError { id: %s, error: %s }", m.ID, m.Error)
		return decision{kind: hang}
	}
	failed := func(reason string) decision {
		p.logf("ERROR", "codex_mcp_server::"+strings.ToLower(what[:1])+what[1:]+"_approval", "failed to deserialize %sApprovalResponse: %s", what, reason)
		return decision{kind: reject, rejection: "approval request failed", status: "failed"}
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(m.Result, &r) != nil {
		return failed("invalid type: " + serdeType(m.Result) + ", expected struct " + what + "ApprovalResponse")
	}
	raw, ok := r["decision"]
	if !ok {
		return failed("missing field `decision`")
	}
	var sv string
	if json.Unmarshal(raw, &sv) == nil {
		switch sv {
		case "approved":
			return decision{kind: approve}
		case "approved_for_session":
			return decision{kind: approveSession}
		case "timed_out":
			return decision{kind: reject, rejection: textTimedOut}
		case "abort":
			return decision{kind: abort}
		case "denied":
			return failed("invalid type: unit variant, expected struct variant")
		case "approved_execpolicy_amendment", "approved_mcp_policy_amendment", "network_policy_amendment":
			return failed("invalid type: unit variant, expected newtype variant")
		}
		return failed(fmt.Sprintf("unknown variant `%s`, expected %s", sv, serdeOneOf(reviewDecisionVariants)))
	}
	var ov map[string]json.RawMessage
	if json.Unmarshal(raw, &ov) != nil || len(ov) != 1 {
		return failed("invalid type: " + serdeType(raw) + ", expected enum ReviewDecision")
	}
	for key, val := range ov {
		switch key {
		case "denied":
			var d struct {
				Rejection *string `json:"rejection"`
			}
			if json.Unmarshal(val, &d) != nil || d.Rejection == nil {
				return failed("missing field `rejection`")
			}
			return decision{kind: reject, rejection: *d.Rejection}
		case "approved_execpolicy_amendment":
			var a struct {
				P []string `json:"proposed_execpolicy_amendment"`
			}
			if json.Unmarshal(val, &a) != nil || a.P == nil {
				return failed("missing field `proposed_execpolicy_amendment`")
			}
			return decision{kind: approveAmendment, amendment: a.P}
		case "approved_mcp_policy_amendment", "network_policy_amendment":
			return decision{kind: approve}
		case "approved", "approved_for_session", "timed_out", "abort":
			return failed("invalid type: newtype variant, expected unit variant")
		default:
			return failed(fmt.Sprintf("unknown variant `%s`, expected %s", key, serdeOneOf(reviewDecisionVariants)))
		}
	}
	return failed("invalid ReviewDecision")
}

func (k *mcpSink) execApproval(ctx context.Context, e *execCall) decision {
	fields := e.amendment()
	k.ev(o("type", "exec_approval_request", "kind", "command", "call_id", e.callID, "turn_id", k.turnID, "environmentId", "local",
		"started_at_ms", e.started, "command", strs(e.argv()...), "cwd", e.cwd, "reason", e.reason,
		"proposed_execpolicy_amendment", strs(fields...),
		"available_decisions", []any{"approved", o("approved_execpolicy_amendment", o("proposed_execpolicy_amendment", strs(fields...))), "abort"},
		"parsed_cmd", parsedCmd(e.cmd)))
	m := k.elicit(ctx, e.callID, o("message", fmt.Sprintf("Allow Codex to run `/bin/bash -lc '%s'` in `%s`?", e.cmd, e.cwd),
		"requestedSchema", o("type", "object", "properties", obj{}), "threadId", k.th().id,
		"codex_elicitation", "exec-approval", "codex_mcp_tool_call_id", idString(k.c.id), "codex_event_id", k.turnID,
		"codex_call_id", e.callID, "codex_command", strs(e.argv()...), "codex_cwd", e.cwd, "codex_parsed_cmd", parsedCmd(e.cmd)))
	if m == nil {
		return decision{kind: abort}
	}
	return k.mcpDecision(m, "Exec")
}

// idString is the tools/call id as codex_mcp_tool_call_id: the number's text
// or the string itself.
func idString(id jsonrpcframe.ID) string {
	if s, ok := id.Str(); ok {
		return s
	}
	return id.String()
}

func (k *mcpSink) cmdItem(e *execCall, status string) obj {
	return o("type", "CommandExecution", "id", e.callID, "process_id", e.pid, "command", strs(e.argv()...), "cwd", "file://"+e.cwd,
		"parsed_cmd", parsedCmd(e.cmd), "source", "unified_exec_startup", "status", status)
}

func (k *mcpSink) execBegin(e *execCall) {
	e.started = nowMs()
	k.ev(o("type", "item_started", "thread_id", k.th().id, "turn_id", k.turnID, "item", k.cmdItem(e, "in_progress"), "started_at_ms", e.started))
	k.ev(o("type", "exec_command_begin", "call_id", e.callID, "process_id", e.pid, "turn_id", k.turnID, "started_at_ms", e.started,
		"command", strs(e.argv()...), "cwd", "file://"+e.cwd, "parsed_cmd", parsedCmd(e.cmd), "source", "unified_exec_startup"))
}

func (k *mcpSink) execEnd(e *execCall, r execResult) {
	status := "completed"
	if r.exitCode != 0 {
		status = "failed"
	}
	dur := o("secs", int64(r.duration/time.Second), "nanos", int64(r.duration%time.Second))
	now := nowMs()
	k.ev(o("type", "item_completed", "thread_id", k.th().id, "turn_id", k.turnID, "item", k.cmdItem(e, status).with(
		"stdout", r.output, "stderr", "", "aggregated_output", r.output, "exit_code", r.exitCode, "duration", dur, "formatted_output", r.output),
		"started_at_ms", e.started, "completed_at_ms", now))
	k.ev(o("type", "exec_command_end", "call_id", e.callID, "process_id", e.pid, "turn_id", k.turnID, "completed_at_ms", now,
		"command", strs(e.argv()...), "cwd", "file://"+e.cwd, "parsed_cmd", parsedCmd(e.cmd), "source", "unified_exec_startup",
		"stdout", r.output, "stderr", "", "aggregated_output", r.output, "exit_code", r.exitCode, "duration", dur,
		"formatted_output", r.output, "status", status))
}

func (k *mcpSink) execRejected(*execCall, string) {}

func changes(pc *patchCall) obj { return o(pc.abs, o("type", "add", "content", pc.content)) }

func (k *mcpSink) patchBegin(pc *patchCall, auto bool) {
	k.ev(o("type", "item_started", "thread_id", k.th().id, "turn_id", k.turnID,
		"item", o("type", "FileChange", "id", pc.callID, "changes", changes(pc), "auto_approved", auto), "started_at_ms", pc.started))
	k.ev(o("type", "patch_apply_begin", "call_id", pc.callID, "turn_id", k.turnID, "auto_approved", auto, "changes", changes(pc)))
}

func (k *mcpSink) patchApproval(ctx context.Context, pc *patchCall) decision {
	k.ev(o("type", "apply_patch_approval_request", "call_id", pc.callID, "turn_id", k.turnID, "started_at_ms", pc.started, "changes", changes(pc)))
	m := k.elicit(ctx, pc.callID, o("message", "Allow Codex to apply proposed code changes?",
		"requestedSchema", o("type", "object", "properties", obj{}), "threadId", k.th().id,
		"codex_elicitation", "patch-approval", "codex_mcp_tool_call_id", idString(k.c.id), "codex_event_id", k.turnID,
		"codex_call_id", pc.callID, "codex_changes", changes(pc)))
	if m == nil {
		return decision{kind: abort}
	}
	return k.mcpDecision(m, "Patch")
}

func (k *mcpSink) patchEnd(pc *patchCall, ok bool, stdout string) {
	status := "completed"
	if !ok {
		status = "declined"
		if stdout == "" {
			status = "failed"
		}
	}
	k.ev(o("type", "item_completed", "thread_id", k.th().id, "turn_id", k.turnID,
		"item", o("type", "FileChange", "id", pc.callID, "changes", changes(pc), "status", status, "stdout", stdout, "stderr", ""),
		"started_at_ms", pc.started, "completed_at_ms", nowMs()))
	k.ev(o("type", "patch_apply_end", "call_id", pc.callID, "turn_id", k.turnID, "stdout", stdout, "stderr", "",
		"success", ok, "changes", changes(pc), "status", status))
	if ok {
		k.ev(o("type", "turn_diff", "unified_diff", unifiedDiff(pc)))
	}
}

// toolApproval: 0.153.4 only emits elicitation_request and never asks the
// client; the turn hangs.
func (k *mcpSink) toolApproval(_ context.Context, tc *toolCall) decision {
	k.ev(o("type", "elicitation_request", "server_name", tc.server, "id", "mcp_tool_call_approval_"+tc.callID,
		"request", o("mode", "form", "_meta", o("codex_approval_kind", "mcp_tool_call", "persist", strs("session", "always"),
			"tool_params", tc.arguments), "message", fmt.Sprintf("Allow the %s MCP server to run tool %q?", tc.server, tc.tool))))
	return decision{kind: hang}
}

func (k *mcpSink) toolBegin(tc *toolCall) {
	k.ev(o("type", "mcp_tool_call_begin", "call_id", tc.callID, "invocation", o("server", tc.server, "tool", tc.tool, "arguments", tc.arguments)))
}

func (k *mcpSink) toolEnd(tc *toolCall, result any, isError bool, dur time.Duration) {
	status := "completed"
	res := any(o("Ok", result))
	if s, ok := result.(string); ok {
		status, res = "failed", o("Err", s)
	} else if isError {
		status = "failed"
	}
	k.ev(o("type", "item_completed", "thread_id", k.th().id, "turn_id", k.turnID,
		"item", o("type", "McpToolCall", "id", tc.callID, "server", tc.server, "tool", tc.tool, "arguments", tc.arguments, "status", status, "result", result),
		"started_at_ms", tc.started, "completed_at_ms", nowMs()))
	k.ev(o("type", "mcp_tool_call_end", "call_id", tc.callID, "invocation", o("server", tc.server, "tool", tc.tool, "arguments", tc.arguments),
		"duration", o("secs", int64(dur/time.Second), "nanos", int64(dur%time.Second)), "result", res))
}

func (k *mcpSink) modelError(message, info string) {
	if info == "other" {
		k.ev(o("type", "token_count", "info", k.th().tokenInfo(), "rate_limits", rateLimits()))
	}
	k.ev(o("type", "error", "message", message, "codex_error_info", info))
}
