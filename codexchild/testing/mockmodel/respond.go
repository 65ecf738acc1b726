package mockmodel

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A Responder writes the answer to one POST /v1/responses. An error ends the
// stream early (the client sees the connection close) and is logged.
type Responder func(s *Stream, r *Request) error

// PatchContent is the content of the file a PATCH=<path> prompt adds.
const PatchContent = "hello from mockmodel\n"

// Default is the built-in keyword behaviour described in the package
// documentation (steps 3 to 9). A [Config.Handler] may delegate to it.
func Default(s *Stream, r *Request) error {
	text := r.LastUserText
	isMessage := r.LastItemType == "message"
	if isMessage {
		switch {
		case strings.Contains(text, "FAIL500"):
			return HTTPError(http.StatusInternalServerError, "mock forced failure")(s, r)
		case strings.Contains(text, "MINIMAL"):
			return minimal(s, "MOCK_MINIMAL")
		case strings.Contains(text, "NOCOMPLETE"):
			return s.Event(map[string]any{"type": "response.output_item.done", "output_index": 0,
				"item": map[string]any{"type": "message", "role": "assistant", "id": "msg_nc_" + strconv.Itoa(s.N()),
					"content": []any{map[string]any{"type": "output_text", "text": "MOCK_NOCOMPLETE"}}}})
		case strings.Contains(text, "DELTAONLY"):
			if err := s.Event(map[string]any{"type": "response.output_text.delta", "item_id": "x",
				"output_index": 0, "content_index": 0, "delta": "MOCK_DELTAONLY"}); err != nil {
				return err
			}
			return s.Completed()
		case strings.Contains(text, "FAILSSE"):
			return Fail("mock response.failed")(s, r)
		}
	}
	if out, ok := r.ToolOutput(); ok {
		return Reply("MOCK_DONE: tool output was: "+truncate(out, 200))(s, r)
	}
	if strings.Contains(text, "SLOW") {
		d := 20 * time.Second
		if m := slowRE.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			d = time.Duration(min(n, 120)) * time.Second
		}
		if err := s.Created(); err != nil {
			return err
		}
		if err := s.Wait(d); err != nil {
			return err
		}
		return afterCreated(s, r)
	}
	if err := s.Created(); err != nil {
		return err
	}
	return afterCreated(s, r)
}

var (
	slowRE     = regexp.MustCompile(`SLOW=(\d+)`)
	cmdRE      = regexp.MustCompile(`(?m)CMD=(.*)$`)
	patchRE    = regexp.MustCompile(`PATCH=(\S+)`)
	callToolRE = regexp.MustCompile(`CALL_TOOL=(\S+)`)
	answerRE   = regexp.MustCompile(`(?m)ANSWER=(.*)$`)
	spawnSubRE = regexp.MustCompile(`SPAWN_SUB(?:=(\d+))?`)
	taskRE     = regexp.MustCompile(`(?m)TASK=(.*)$`)
	argsRE     = regexp.MustCompile(`(?m)ARGS=(.*)$`)
)

// afterCreated is steps 6 to 9: what follows response.created.
func afterCreated(s *Stream, r *Request) error {
	text := r.LastUserText
	escalate := strings.Contains(text, "ESCALATE")
	var fc FunctionCall
	switch {
	case answerRE.MatchString(text):
		return messageCompleted(s, strings.TrimSpace(answerRE.FindStringSubmatch(text)[1]))
	case strings.Contains(text, "RECALL"):
		return messageCompleted(s, "MOCK_RECALL: "+strings.Join(r.EarlierUserTexts(), " | "))
	case spawnSubRE.MatchString(text):
		task := SubAgentTask(spawnSubRE.FindStringSubmatch(text)[1])
		if m := taskRE.FindStringSubmatch(text); m != nil {
			task = strings.TrimSpace(m[1])
		}
		fc = SpawnSubAgent(r, task)
	case callToolRE.MatchString(text):
		target := callToolRE.FindStringSubmatch(text)[1]
		fc.Name = target
		if ns, name, ok := strings.Cut(target, "."); ok {
			fc.Namespace, fc.Name = ns, name
		}
		fc.Arguments = "{}"
		if m := argsRE.FindStringSubmatch(text); m != nil {
			fc.Arguments = strings.TrimSpace(m[1])
		}
	case patchRE.MatchString(text):
		fc = shellCall(r, PatchCommand(patchRE.FindStringSubmatch(text)[1], PatchContent), escalate)
	case strings.Contains(text, "RUN_SHELL"):
		cmd := "touch mock_shell_probe.txt"
		if m := cmdRE.FindStringSubmatch(text); m != nil {
			cmd = strings.ReplaceAll(strings.TrimSpace(m[1]), `\n`, "\n")
		}
		fc = shellCall(r, cmd, escalate)
	default:
		return messageCompleted(s, "MOCK_REPLY: "+truncate(strings.TrimSpace(text), 500))
	}
	if err := s.FunctionCall(fc); err != nil {
		return err
	}
	return s.Completed()
}

// messageCompleted ends a stream after response.created with the message
// text and response.completed.
func messageCompleted(s *Stream, text string) error {
	if err := s.Message(text); err != nil {
		return err
	}
	return s.Completed()
}

// SubAgentTask is the task SPAWN_SUB[=n] gives the sub-agent: "sub-agent
// task", or "SLOW=<n> sub-agent task" (the sub-agent's model then takes
// n seconds) when n is given.
func SubAgentTask(n string) string {
	if n == "" {
		return "sub-agent task"
	}
	return "SLOW=" + n + " sub-agent task"
}

// SpawnSubAgent is the call of Codex's spawn_agent tool (in 0.171.0 the
// namespace multi_agent_v1, whichever namespace the request offers it in)
// with the task as its message.
func SpawnSubAgent(r *Request, task string) FunctionCall {
	fc := FunctionCall{Namespace: "multi_agent_v1", Name: "spawn_agent", Arguments: string(marshal(map[string]any{"message": task}))}
	for _, n := range r.ToolNames {
		if ns, name, ok := strings.Cut(n, "."); ok && name == "spawn_agent" {
			fc.Namespace = ns
		}
	}
	return fc
}

// Reply answers with response.created, the assistant message text and
// response.completed.
func Reply(text string) Responder {
	return func(s *Stream, _ *Request) error {
		if err := s.Created(); err != nil {
			return err
		}
		if err := s.Message(text); err != nil {
			return err
		}
		return s.Completed()
	}
}

// Call answers with response.created, the function call and
// response.completed.
func Call(fc FunctionCall) Responder {
	return func(s *Stream, _ *Request) error {
		if err := s.Created(); err != nil {
			return err
		}
		if err := s.FunctionCall(fc); err != nil {
			return err
		}
		return s.Completed()
	}
}

// Shell answers with a call of the shell tool the request offers
// (exec_command, shell_command or shell, in that order of preference) running
// cmd; escalate asks to run it outside the sandbox.
func Shell(cmd string, escalate bool) Responder {
	return func(s *Stream, r *Request) error {
		return Call(shellCall(r, cmd, escalate))(s, r)
	}
}

// Patch answers with an exec_command call of [PatchCommand](path, content).
func Patch(path, content string) Responder {
	return Shell(PatchCommand(path, content), false)
}

// PatchCommand returns the apply_patch heredoc that adds the file path with
// the content (each line becomes a "+" line; a final newline is implied).
func PatchCommand(path, content string) string {
	var b strings.Builder
	b.WriteString("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ")
	b.WriteString(path)
	b.WriteString("\n")
	for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + line + "\n")
	}
	b.WriteString("*** End Patch\nEOF")
	return b.String()
}

// HTTPError answers with an HTTP error status and a JSON error body.
func HTTPError(code int, message string) Responder {
	return func(s *Stream, _ *Request) error { return s.HTTPError(code, message) }
}

// Fail answers with response.created and response.failed.
func Fail(message string) Responder {
	return func(s *Stream, _ *Request) error {
		if err := s.Created(); err != nil {
			return err
		}
		return s.Failed(message)
	}
}

// Slow waits d (with keep-alives) after response.created, then lets next
// write the rest of the answer; next must not send response.created again.
// Use it with [Stream] methods, for example Slow(d, func(s, r) error { ... }).
func Slow(d time.Duration, next Responder) Responder {
	return func(s *Stream, r *Request) error {
		if err := s.Created(); err != nil {
			return err
		}
		if err := s.Wait(d); err != nil {
			return err
		}
		return next(s, r)
	}
}

func minimal(s *Stream, text string) error {
	if err := s.Event(map[string]any{"type": "response.output_item.done", "output_index": 0,
		"item": map[string]any{"type": "message", "role": "assistant", "id": "msg_min_" + strconv.Itoa(s.N()),
			"content": []any{map[string]any{"type": "output_text", "text": text}}}}); err != nil {
		return err
	}
	return s.Event(map[string]any{"type": "response.completed", "response": map[string]any{"id": s.ResponseID()}})
}

// shellCall builds the call of the shell tool the request offers.
func shellCall(r *Request, cmd string, escalate bool) FunctionCall {
	var name string
	args := map[string]any{}
	switch {
	case r.HasTool("shell_command"):
		name = "shell_command"
		args["command"] = cmd
	case r.HasTool("exec_command"):
		name = "exec_command"
		args["cmd"] = cmd
	default:
		name = "shell"
		args["command"] = []string{"bash", "-lc", cmd}
	}
	if escalate {
		args["sandbox_permissions"] = "require_escalated"
		args["justification"] = "mock wants to run outside the sandbox"
	}
	return FunctionCall{Name: name, Arguments: string(marshal(args))}
}

// truncate returns the first n runes of s.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
