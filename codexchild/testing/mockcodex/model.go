package mockcodex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file is the mock model and the turn loop both protocols share. The
// model answers exactly like package mockmodel answers the real Codex (same
// keywords, same texts); the loop does what Codex does with the answer (run
// the command, ask for approval, call the MCP tool) and reports every step to
// a sink, which turns it into codex/event notifications (mcp-server) or
// item/turn notifications (app-server).

var (
	slowRE     = regexp.MustCompile(`SLOW=(\d+)`)
	cmdRE      = regexp.MustCompile(`(?m)CMD=(.*)$`)
	patchRE    = regexp.MustCompile(`PATCH=(\S+)`)
	callToolRE = regexp.MustCompile(`CALL_TOOL=(\S+)`)
	argsRE     = regexp.MustCompile(`(?m)ARGS=(.*)$`)
	eventsRE   = regexp.MustCompile(`EVENTS=(\d+)`)
	answerRE   = regexp.MustCompile(`(?m)ANSWER=(.*)$`)
	spawnRE    = regexp.MustCompile(`SPAWN_(?:SUB|AGENT)(?:=(\d+))?`)
	taskRE     = regexp.MustCompile(`(?m)TASK=(.*)$`)
	crashRE    = regexp.MustCompile(`CRASH=(\S+)`)
	floodRE    = regexp.MustCompile(`STDERR_FLOOD=(\d+)`)
)

// patchContent is mockmodel.PatchContent: what a PATCH=<path> prompt adds.
const patchContent = "hello from mockmodel\n"

// The texts Codex gives the model or the client in the recorded cases.
const (
	text500                = "We're currently experiencing high demand, which may cause temporary errors."
	textFailSSE            = "stream disconnected before completion: mock response.failed"
	textNoComplete         = "stream disconnected before completion: stream closed before response.completed"
	textNeverEsc           = "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never"
	textTimedOut           = "The automatic permission approval review did not finish before its deadline. Do not assume the action is unsafe based on the timeout alone. You may retry once, or ask the user for guidance or explicit approval."
	textAborted            = "Wall time: 0.1 seconds\naborted by user"
	textMCPNever           = "MCP tool call requires approval, but approval policy is never"
	textPatchNever         = "patch rejected: writing outside of the project; rejected by user approval settings"
	textTurnAbortedContext = "<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified exec processes may still be running in the background. If any tools/commands were aborted, they may have partially executed.\n</turn_aborted>"
	justification          = "mock wants to run outside the sandbox"
)

// decisionKind is what an approval answer means to the turn.
type decisionKind int

const (
	approve decisionKind = iota
	approveSession
	approveAmendment
	reject // the model sees Rejected(rejection)
	abort  // the turn is aborted
	hang   // the turn never continues (mcp-server: JSON-RPC error answer)
)

type decision struct {
	kind      decisionKind
	rejection string   // reject: the text in Rejected(...)
	status    string   // app-server item status for reject: "declined" or "failed"
	amendment []string // approveAmendment
}

// execCall is a shell command the model asked for.
type execCall struct {
	callID   string
	cmd      string
	cwd      string
	env      []string // added to the command's environment (shell_environment_policy.set)
	escalate bool
	reason   string // justification, "" when not escalated
	started  int64  // ms
	pid      string
}

func (e *execCall) argv() []string { return []string{"/bin/bash", "-lc", e.cmd} }

func (e *execCall) amendment() []string { return strings.Fields(e.cmd) }

// execResult is what running it gave.
type execResult struct {
	output    string
	exitCode  int
	duration  time.Duration
	formatted string // function_call_output text
}

// patchCall is an apply_patch the model asked for.
type patchCall struct {
	callID  string
	shown   string // the path as written in the patch
	abs     string
	content string
	started int64
}

// toolCall is a call of a per-thread MCP server tool.
type toolCall struct {
	callID    string
	server    string
	tool      string
	arguments any
	started   int64
}

// sink receives the steps of a turn. Methods are called from the turn's
// goroutine only, in the order Codex emits the matching events.
type sink interface {
	userMessage(text string)
	// message: the model answered with text (deltas concatenate to text).
	message(id, respID, text string, deltas []string)
	// functionCall: the model asked for a tool call (mcp: raw_response_item
	// and raw_response_completed).
	functionCall(callID, fcID, respID, name, namespace, arguments string)
	// toolOutput: what the model gets back for the call.
	toolOutput(callID, output string)
	execApproval(ctx context.Context, e *execCall) decision
	execBegin(e *execCall)
	execEnd(e *execCall, r execResult)
	execRejected(e *execCall, status string)
	patchBegin(pc *patchCall, autoApproved bool)
	patchApproval(ctx context.Context, pc *patchCall) decision
	patchEnd(pc *patchCall, ok bool, stdout string)
	toolApproval(ctx context.Context, tc *toolCall) decision
	toolBegin(tc *toolCall)
	toolEnd(tc *toolCall, result any, isError bool, dur time.Duration)
	modelError(message, info string)
	// retrying: Codex could not reach the model and will retry (RETRY=n).
	retrying(message string)
	// warn logs to stderr like codex's tracing.
	warn(level, target, text string)
}

// errInterrupted ends a turn that was cancelled, interrupted or aborted;
// pendingCall is the tool call that was running, if any.
type errInterrupted struct{ pendingCall string }

func (e *errInterrupted) Error() string { return "turn interrupted" }

// errFailed ends a turn whose model request failed.
type errFailed struct{ message, info string }

func (e *errFailed) Error() string { return e.message }

// errHung means the turn will never continue (returned only at shutdown).
var errHung = errors.New("turn hangs")

// turnEnv is what the loop needs from the thread.
type turnEnv struct {
	p      *process
	th     *threadCore
	turnID string
	text   string
	steer  func() []string // pending steer input (app-server), nil for none
	// steered is signalled by turn/steer (app-server; nil otherwise): a
	// model request in progress (SLOW) ends at once, as the real Codex
	// drops it, and the steer's input is answered instead (STEER_RACE:
	// the original prompt is answered at once).
	steered  <-chan struct{}
	hasSteer func() bool
	// spawn starts a sub-agent with a task and returns the tool output
	// (app-server: SPAWN_SUB); nil where the protocol has none.
	spawn    func(task string) string
	sink     sink
	lastText string
}

// runTurn runs the model loop of one turn until the model answers with a
// message (returned as the last agent message) or the turn ends early.
func runTurn(ctx context.Context, t *turnEnv) (string, error) {
	if d := t.p.getenv("MOCKCODEX_DELAY_MS"); d != "" {
		if ms, err := strconv.Atoi(d); err == nil && ms > 0 {
			if err := sleepCtx(ctx, time.Duration(ms)*time.Millisecond); err != nil {
				return "", &errInterrupted{}
			}
		}
	}
	if v := t.p.getenv("MOCKCODEX_SLOW_IF"); v != "" {
		ms, text, _ := strings.Cut(v, ":")
		if n, err := strconv.Atoi(ms); err == nil && n > 0 && text != "" && strings.Contains(t.text, text) {
			if err := sleepCtx(ctx, time.Duration(n)*time.Millisecond); err != nil {
				return "", &errInterrupted{}
			}
		}
	}
	if err := t.retryNotices(ctx); err != nil {
		return "", err
	}
	input := t.text
	toolOut, haveToolOut := "", false
	for {
		text, err := t.modelRound(ctx, input, toolOut, haveToolOut)
		if errors.Is(err, errSteered) {
			more := t.steer()
			input, haveToolOut = more[len(more)-1], false
			continue
		}
		if err != nil || text != nil {
			if err != nil {
				return "", err
			}
			t.lastText = *text
			// app-server steering: more user input continues the turn.
			if t.steer != nil {
				if more := t.steer(); len(more) > 0 {
					input = more[len(more)-1]
					haveToolOut = false
					continue
				}
			}
			return *text, nil
		}
		// a tool call happened: its output is the next model input
		toolOut, haveToolOut = t.th.lastToolOutput, true
	}
}

// modelRound is one model request. It returns the final message text, or
// nil after a tool call whose output is in th.lastToolOutput.
func (t *turnEnv) modelRound(ctx context.Context, text, toolOut string, haveToolOut bool) (*string, error) {
	n := t.p.nextModelN()
	respID := fmt.Sprintf("resp_mock_%d", n)
	msgID := fmt.Sprintf("msg_mock_%d", n)
	if !haveToolOut {
		switch {
		case strings.Contains(text, "FAIL500"):
			t.sink.modelError(text500, "internal_server_error")
			return nil, &errFailed{text500, "internal_server_error"}
		case strings.Contains(text, "MINIMAL"):
			t.th.addUsage()
			t.sink.message("msg_min_"+strconv.Itoa(n), respID, "MOCK_MINIMAL", nil)
			s := "MOCK_MINIMAL"
			return &s, nil
		case strings.Contains(text, "NOCOMPLETE"):
			t.sink.modelError(textNoComplete, "other")
			return nil, &errFailed{textNoComplete, "other"}
		case strings.Contains(text, "FAILSSE"):
			t.sink.modelError(textFailSSE, "other")
			return nil, &errFailed{textFailSSE, "other"}
		}
	}
	if haveToolOut {
		return t.reply(msgID, respID, "MOCK_DONE: tool output was: "+truncate(toolOut, 200), text)
	}
	if strings.Contains(text, "SLOW") {
		d := 20 * time.Second
		if m := slowRE.FindStringSubmatch(text); m != nil {
			s, _ := strconv.Atoi(m[1])
			d = time.Duration(min(s, 120)) * time.Second
		}
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return nil, &errInterrupted{}
		case <-t.steered:
			tm.Stop()
			if t.hasSteer() {
				return nil, errSteered
			}
		}
	}
	escalate := strings.Contains(text, "ESCALATE")
	callID := fmt.Sprintf("call_mock_%d", n)
	fcID := fmt.Sprintf("fc_mock_%d", n)
	switch {
	case answerRE.MatchString(text):
		return t.reply(msgID, respID, strings.TrimSpace(answerRE.FindStringSubmatch(text)[1]), text)
	case strings.Contains(text, "RECALL"):
		return t.reply(msgID, respID, "MOCK_RECALL: "+strings.Join(t.th.recall(), " | "), text)
	case spawnRE.MatchString(text):
		task := subAgentTask(spawnRE.FindStringSubmatch(text)[1])
		if m := taskRE.FindStringSubmatch(text); m != nil {
			task = strings.TrimSpace(m[1])
		}
		t.th.addUsage()
		t.sink.functionCall(callID, fcID, respID, "spawn_agent", "multi_agent_v1", `{"message":`+strconv.Quote(task)+`}`)
		if t.spawn == nil {
			t.setOutput(callID, "unsupported call: spawn_agent")
		} else {
			t.setOutput(callID, t.spawn(task))
		}
		return nil, nil
	case callToolRE.MatchString(text):
		target := callToolRE.FindStringSubmatch(text)[1]
		name, ns := target, ""
		if a, b, ok := strings.Cut(target, "."); ok {
			ns, name = a, b
		}
		args := "{}"
		if m := argsRE.FindStringSubmatch(text); m != nil {
			args = strings.TrimSpace(m[1])
		}
		t.th.addUsage()
		t.sink.functionCall(callID, fcID, respID, name, ns, args)
		return nil, t.callTool(ctx, callID, ns, name, args)
	case patchRE.MatchString(text):
		cmd := patchCommand(patchRE.FindStringSubmatch(text)[1], patchContent)
		return nil, t.shell(ctx, callID, fcID, respID, cmd, escalate)
	case strings.Contains(text, "RUN_SHELL"):
		cmd := "touch mock_shell_probe.txt"
		if m := cmdRE.FindStringSubmatch(text); m != nil {
			cmd = strings.ReplaceAll(strings.TrimSpace(m[1]), `\n`, "\n")
		}
		return nil, t.shell(ctx, callID, fcID, respID, cmd, escalate)
	}
	return t.reply(msgID, respID, "MOCK_REPLY: "+truncate(strings.TrimSpace(text), 500), text)
}

// reply streams the message; EVENTS=<n> in the user text adds n deltas.
func (t *turnEnv) reply(msgID, respID, msg, userText string) (*string, error) {
	parts := 2
	if m := eventsRE.FindStringSubmatch(t.text); m != nil {
		extra, _ := strconv.Atoi(m[1])
		parts += min(extra, 100000)
	}
	t.th.addUsage()
	t.sink.message(msgID, respID, msg, splitRunes(msg, parts))
	return &msg, nil
}

// shellArgs builds the exec_command arguments mockmodel sends.
func shellArgs(cmd string, escalate bool) string {
	args := map[string]any{"cmd": cmd} // a map, as mockmodel sends: sorted keys
	if escalate {
		args["sandbox_permissions"] = "require_escalated"
		args["justification"] = justification
	}
	b, _ := marshal(args)
	return string(b)
}

// shell is an exec_command call: an apply_patch heredoc becomes a patch.
func (t *turnEnv) shell(ctx context.Context, callID, fcID, respID, cmd string, escalate bool) error {
	t.th.addUsage()
	t.sink.functionCall(callID, fcID, respID, "exec_command", "", shellArgs(cmd, escalate))
	if pc, ok := parsePatch(cmd, t.th.cwd); ok {
		pc.callID = callID
		return t.patch(ctx, pc)
	}
	e := &execCall{callID: callID, cmd: cmd, cwd: t.th.cwd, env: t.th.env, escalate: escalate, started: nowMs()}
	if escalate {
		e.reason = justification
	}
	needs := false
	policy := t.th.approvalPolicy
	switch {
	case escalate && policy == "never":
		t.sink.warn("ERROR", "codex_core::tools::router", "error="+textNeverEsc)
		t.setOutput(callID, textNeverEsc)
		return nil
	case escalate:
		needs = true
	case policy == "untrusted":
		needs = !knownSafe(cmd)
	}
	if needs && (t.th.allowed(cmd) || t.p.ruleAllows(cmd)) {
		needs = false
	}
	if needs {
		d := t.sink.execApproval(ctx, e)
		switch d.kind {
		case hang:
			<-t.p.ctx.Done()
			return errHung
		case abort:
			return &errInterrupted{pendingCall: callID}
		case reject:
			out := rejectedText(d.rejection)
			t.sink.execRejected(e, d.status)
			t.sink.warn("ERROR", "codex_core::tools::router", "error="+out)
			t.setOutput(callID, out)
			return nil
		case approveSession:
			t.th.allow(cmd)
		case approveAmendment:
			t.th.allow(cmd)
			t.p.addRule(d.amendment)
		}
		if ctx.Err() != nil {
			return &errInterrupted{pendingCall: callID}
		}
	}
	e.pid = strconv.Itoa(10000 + t.p.nextModelN()%50000)
	t.sink.execBegin(e)
	r, err := runShell(ctx, e.cwd, e.cmd, e.env)
	if err != nil {
		return &errInterrupted{pendingCall: callID}
	}
	t.sink.execEnd(e, r)
	t.setOutput(callID, r.formatted)
	return nil
}

// patch applies (or asks about) an apply_patch.
func (t *turnEnv) patch(ctx context.Context, pc *patchCall) error {
	pc.started = nowMs()
	needs := t.th.patchNeedsApproval(pc.abs)
	if needs && t.th.approvalPolicy == "never" {
		t.setOutput(pc.callID, textPatchNever)
		return nil
	}
	t.sink.patchBegin(pc, !needs)
	if needs {
		d := t.sink.patchApproval(ctx, pc)
		switch d.kind {
		case hang:
			<-t.p.ctx.Done()
			return errHung
		case abort:
			return &errInterrupted{pendingCall: pc.callID}
		case reject:
			t.sink.patchEnd(pc, false, "")
			t.setOutput(pc.callID, "patch rejected by user")
			return nil
		}
		if ctx.Err() != nil {
			return &errInterrupted{pendingCall: pc.callID}
		}
	}
	if err := applyPatch(pc); err != nil {
		t.sink.patchEnd(pc, false, "")
		t.setOutput(pc.callID, "apply_patch verification failed: "+err.Error())
		return nil
	}
	stdout := "Success. Updated the following files:\nA " + pc.shown + "\n"
	t.sink.patchEnd(pc, true, stdout)
	t.setOutput(pc.callID, "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0.1 seconds\nOutput:\n"+stdout)
	return nil
}

// callTool calls a tool of the thread's MCP server.
func (t *turnEnv) callTool(ctx context.Context, callID, ns, name, args string) error {
	server := strings.TrimPrefix(ns, "mcp__")
	srv := t.th.server(server)
	if ns == "" || !strings.HasPrefix(ns, "mcp__") || srv == nil || !srv.hasTool(name) {
		t.setOutput(callID, "unsupported call: "+name)
		return nil
	}
	var argv any
	if err := jsonUnmarshal([]byte(args), &argv); err != nil {
		t.setOutput(callID, "failed to parse function arguments: "+err.Error())
		return nil
	}
	tc := &toolCall{callID: callID, server: server, tool: name, arguments: argv, started: nowMs()}
	if srv.needsApproval(name) {
		if t.th.approvalPolicy == "never" && t.th.sandbox != "danger-full-access" {
			t.setOutput(callID, textMCPNever)
			return nil
		}
		if !(t.th.approvalPolicy == "never") {
			d := t.sink.toolApproval(ctx, tc)
			switch d.kind {
			case hang:
				<-t.p.ctx.Done()
				return errHung
			case abort:
				return &errInterrupted{pendingCall: callID}
			case reject:
				t.setOutput(callID, "user rejected MCP tool call")
				return nil
			}
		}
	}
	t.sink.toolBegin(tc)
	start := time.Now()
	res, err := srv.call(ctx, name, argv, o("callId", callID, "threadId", t.th.id, "x-codex-turn-metadata", o("thread_id", t.th.id, "turn_id", t.turnID)))
	if ctx.Err() != nil {
		return &errInterrupted{pendingCall: callID}
	}
	dur := time.Since(start)
	if err != nil {
		t.sink.toolEnd(tc, err.Error(), true, dur)
		t.setOutput(callID, "tool call error: "+err.Error())
		return nil
	}
	t.sink.toolEnd(tc, res.raw, res.isError, dur)
	out := fmt.Sprintf("Wall time: %.4f seconds\nOutput:", dur.Seconds())
	for _, s := range res.texts {
		out += "\n" + s
	}
	t.setOutput(callID, out)
	return nil
}

func (t *turnEnv) setOutput(callID, out string) {
	t.th.lastToolOutput = out
	t.sink.toolOutput(callID, out)
}

// rejectedText is the function_call_output of a rejected command, in Rust's
// Debug formatting as Codex writes it.
func rejectedText(rejection string) string {
	return "exec_command failed: CreateProcess { message: " + rustDebug("Rejected("+rustDebug(rejection)+")") + " }"
}

// rustDebug quotes s like Rust's {:?} for a str.
func rustDebug(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u{%x}`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// knownSafe approximates Codex's list of commands that never need approval
// under the untrusted policy.
func knownSafe(cmd string) bool {
	f := strings.Fields(cmd)
	if len(f) == 0 || strings.ContainsAny(cmd, "|&;><$`") {
		return false
	}
	switch f[0] {
	case "ls", "cat", "echo", "pwd", "true", "false", "head", "tail", "wc", "grep", "rg", "whoami", "nl", "which":
		return true
	}
	return false
}

// truncate returns the first n runes of s.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// splitRunes splits s into n consecutive pieces (the first two halves as
// mockmodel does for n == 2; pieces may be empty).
func splitRunes(s string, n int) []string {
	r := []rune(s)
	out := make([]string, 0, n)
	if n == 2 {
		return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
	}
	for i := 0; i < n; i++ {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

// subAgentTask is the task SPAWN_SUB[=n] gives its sub-agent, as
// mockmodel's: "sub-agent task", slow for n seconds when n is given.
func subAgentTask(n string) string {
	if n == "" {
		return "sub-agent task"
	}
	return "SLOW=" + n + " sub-agent task"
}

// errSteered ends a model request that turn/steer cut short.
var errSteered = errors.New("steered")

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// faults runs the mock-only fault keywords that act before any event of a
// turn: GARBAGE and STDERR_FLOOD.
func (p *process) preTurnFaults(text string) {
	if strings.Contains(text, "GARBAGE") {
		p.out.writeRaw([]byte("this is not JSON\n"))
		p.out.writeRaw([]byte("\x1b[2m2026-01-01T00:00:00Z  INFO mockcodex: a log line on stdout\x1b[0m\n"))
		p.out.writeRaw([]byte(`{"jsonrpc":"2.0","method":"codex/event","params":{"_meta":` + "\n"))
	}
	if m := floodRE.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		go p.flood(n)
	}
	if m := garbageFloodRE.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		for range n {
			p.out.writeRaw([]byte("garbage-not-json\n"))
		}
	}
}

// garbageFloodRE: GARBAGE_FLOOD=<n> writes n lines that are not JSON on
// stdout before the turn's events (a child gone mad, `yes garbage`).
var garbageFloodRE = regexp.MustCompile(`GARBAGE_FLOOD=(\d+)`)

// garbageAfterRE: GARBAGE_FLOOD_AFTER=<n> writes n lines that are not
// JSON on stdout after the turn's result (a child that goes mad between
// turns, when no call of its client is waiting).
var garbageAfterRE = regexp.MustCompile(`GARBAGE_FLOOD_AFTER=(\d+)`)

// postTurnFaults runs the fault keywords that act after a turn's result:
// GARBAGE_FLOOD_AFTER.
func (p *process) postTurnFaults(text string) {
	if m := garbageAfterRE.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		for range n {
			p.out.writeRaw([]byte("garbage-not-json\n"))
		}
	}
}

// flood writes n bytes to stderr from its own goroutine, so a reader that
// does not drain stderr blocks this goroutine only.
func (p *process) flood(n int) {
	line := strings.Repeat("x", 1023) + "\n"
	for n > 0 {
		chunk := line
		if n < len(chunk) {
			chunk = line[:n-1] + "\n"
		}
		if !p.errw.write([]byte(chunk)) {
			return
		}
		n -= len(chunk)
	}
}

// midTurnFaults runs CRASH (after the user message). HANG is handled by the
// caller right after task_started.
func (p *process) midTurnFaults(text string) {
	m := crashRE.FindStringSubmatch(text)
	if m == nil {
		return
	}
	if code, err := strconv.Atoi(m[1]); err == nil {
		p.exitNow(code)
	}
	sig := map[string]syscall.Signal{"SIGKILL": syscall.SIGKILL, "SIGSEGV": syscall.SIGSEGV, "SIGTERM": syscall.SIGTERM,
		"SIGABRT": syscall.SIGABRT, "SIGBUS": syscall.SIGBUS, "SIGINT": syscall.SIGINT, "SIGQUIT": syscall.SIGQUIT, "SIGHUP": syscall.SIGHUP}[strings.ToUpper(m[1])]
	if sig == 0 {
		p.exitNow(101)
	}
	// A Go program handles SIGSEGV etc. itself; reset to the default action
	// so the process really dies of the signal.
	resetSignal(sig)
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
	p.exitNow(128 + int(sig))
}

// hangs reports whether the turn must hang (HANG keyword).
func hangs(text string) bool { return strings.Contains(text, "HANG") }
