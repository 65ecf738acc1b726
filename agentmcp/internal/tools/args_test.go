package tools

import (
	"strings"
	"testing"
)

// TestBadArguments: every tool refuses bad arguments with a JSON-RPC error
// that names the argument, and nothing happens.
func TestBadArguments(t *testing.T) {
	h := newHarness(t)
	arch := h.ok("codex", `{"prompt":"hi","identity":"arch"}`)["agent_id"].(string)
	before := len(h.fb.Prompts())
	tests := []struct {
		tool, args string
		want       string // "code message"
	}{
		{"nope", `{}`, `-32602 unknown tool "nope" (available: codex, codex-reply, atm_send, atm_read, atm_broadcast, atm_pending_count, agent_sessions, agent_status, agent_close, agent_wait, agent_interrupt, agent_respond, agent_list_codex_sessions, agent_restart_codex, agent_start, agent_reply, agent_diff, agent_merge, agent_fork)`},
		{"codex", `{}`, `-32602 argument "prompt" is required (or agent_file, or agent_id to resume)`},
		{"codex", `{"prompt":"  "}`, `-32602 argument "prompt" is required (or agent_file, or agent_id to resume)`},
		{"codex", `{"prompt":5}`, `-32602 argument "prompt" must be a string`},
		{"codex", `{"prompt":"x","bogus":1}`, `-32602 unknown argument(s) for codex: bogus (expected one of: prompt, agent_file, agent_id, identity, role, tag, auto_mail, cwd, host, isolation, base, model, approval-policy, sandbox, base-instructions, developer-instructions, compact-prompt, profile, config, background, thread_id, output_schema)`},
		{"codex", `{"prompt":"x","agent_file":"a.md"}`, `-32007 prompt and agent_file are mutually exclusive: give exactly one`},
		{"codex", `{"agent_file":"missing.md"}`, `-32008 agent_file "missing.md" cannot be read: no such file or directory`},
		{"codex", `{"prompt":"x","auto_mail":"yes"}`, `-32602 argument "auto_mail" must be a boolean`},
		{"codex", `{"prompt":"x","config":[1]}`, `-32602 argument "config" must be an object`},
		{"codex", `{"prompt":"x","cwd":"/does/not/exist"}`, `-32602 cwd "/does/not/exist" is not an existing directory`},
		{"codex", `{"prompt":"x","identity":"arch"}`, `-32001 identity conflict: "arch" is already bound to agent_id "` + arch + `"`},
		{"codex", `{"agent_id":"codex-x","thread_id":"t"}`, `-32007 agent_id (resume) excludes agent_file and thread_id`},
		{"codex", `{"agent_id":"codex-nope"}`, `-32002 no session with agent_id "codex-nope" in this proxy's registry`},
		{"codex-reply", `{"prompt":"x"}`, `-32602 codex-reply needs agent_id (or threadId)`},
		{"codex-reply", `{"prompt":"x","agent_id":"codex-nope"}`, `-32002 no session with agent_id "codex-nope" in this proxy's registry`},
		{"codex-reply", `{"agent_id":7,"prompt":"x"}`, `-32602 argument "agent_id" must be a string`},
		{"codex-reply", `{"agent_id":"` + arch + `","prompt":"x","budget_tokens":0}`, `-32602 argument "budget_tokens" must be at least 1 (tokens)`},
		{"codex-reply", `{"agent_id":"` + arch + `","prompt":"x","team_budget_tokens":"lots"}`, `-32602 argument "team_budget_tokens" must be an integer`},
		{"agent_reply", `{"agent_id":"` + arch + `","prompt":"x","budget":5}`, `-32602 unknown argument(s) for agent_reply: budget (expected one of: agent_id, prompt, cwd, background, budget_tokens, team_budget_tokens, steer, output_schema)`},
		{"atm_send", `{}`, `-32009 an ATM tool called outside a session needs agent_id or identity (an identity this proxy holds)`},
		{"atm_send", `{"identity":"dev-1","to":"arch","message":"hi"}`, `-32001 identity "dev-1" is not held by this proxy (it holds "proxy" and the identities of its live sessions); nobody can send as someone else`},
		{"atm_send", `{"identity":"arch"}`, `-32602 argument "to" is required`},
		{"atm_send", `{"identity":"arch","to":"arch"}`, `-32602 argument "message" is required`},
		{"atm_send", `{"identity":"arch","to":"arch","message":" "}`, `-32602 atm_send: send: invalid message text: text is blank`},
		{"atm_send", `{"identity":"arch","to":"nobody","message":"hi"}`, `-32602 atm_send: send: not a team member: "nobody" is not in team "dev"`},
		{"atm_send", `{"identity":"arch","to":"arch","message":5}`, `-32602 argument "message" must be a string`},
		{"atm_read", `{"identity":"arch","limit":-1}`, `-32602 argument "limit" must be at least 1`},
		{"atm_read", `{"identity":"arch","limit":"3"}`, `-32602 argument "limit" must be an integer`},
		{"atm_broadcast", `{"identity":"arch"}`, `-32602 argument "message" is required`},
		{"atm_pending_count", `{"identity":"arch","bogus":true}`, `-32602 unknown argument(s) for atm_pending_count: bogus (expected one of: agent_id, identity)`},
		{"agent_status", `{"agent_id":"codex-nope"}`, `-32002 no session with agent_id "codex-nope"`},
		{"agent_close", `{}`, `-32602 agent_close needs agent_id or identity`},
		{"agent_close", `{"agent_id":"` + arch + `","identity":"dev-1"}`, `-32602 identity "dev-1" does not match the identity "arch" of session ` + arch},
		{"codex", `{"agent_id":"` + arch + `","identity":"dev-1","prompt":"go on"}`, `-32602 identity "dev-1" does not match the identity "arch" of session ` + arch},
		{"agent_wait", `{"agent_id":"codex-nope"}`, `-32002 no session with agent_id "codex-nope"`},
		{"agent_wait", `{"agent_id":"` + arch + `","timeout_secs":"soon"}`, `-32602 argument "timeout_secs" must be an integer`},
		{"agent_wait", `{"agent_id":"` + arch + `","timeout_secs":-1}`, `-32602 argument "timeout_secs" must not be negative`},
		{"agent_interrupt", `{}`, `-32602 argument "agent_id" is required`},
		{"agent_respond", `{"agent_id":"` + arch + `","approval_id":"a","decision":"approve"}`, `-32602 unknown argument(s) for agent_respond: decision (expected one of: agent_id, approval_id, answer, reason)`},
		{"agent_respond", `{"agent_id":"` + arch + `","approval_id":"approval-9","answer":"approve"}`, `-32602 no pending approval "approval-9" for this session (see agent_status)`},
		{"agent_respond", `{"agent_id":"` + arch + `","approval_id":"approval-9","answer":"maybe"}`, `-32602 answer "maybe" is not approve, approve_for_session, deny or "deny: reason"`},
		{"agent_sessions", `{"status":7}`, `-32602 unknown argument(s) for agent_sessions: status (expected one of: all)`},
		{"agent_sessions", `{"all":"yes"}`, `-32602 argument "all" must be a boolean`},
		{"agent_list_codex_sessions", `{"limit":-5}`, `-32602 argument "limit" must be at least 1`},
		{"agent_list_codex_sessions", `{"limit":1.5}`, `-32602 argument "limit" must be an integer`},
		{"agent_diff", `{}`, `-32602 argument "agent_id" is required`},
		{"agent_diff", `{"agent_id":"` + arch + `","paths":["a"]}`, `-32602 unknown argument(s) for agent_diff: paths (expected one of: agent_id, stat, path, offset)`},
		{"agent_diff", `{"agent_id":"` + arch + `","offset":-1}`, `-32602 argument "offset" must not be negative`},
		{"agent_diff", `{"agent_id":"` + arch + `","stat":"yes"}`, `-32602 argument "stat" must be a boolean`},
		{"agent_diff", `{"agent_id":"` + arch + `"}`, `-32007 agent_diff and agent_merge need git, which was not found (or is older than 2.38) when this serve started`},
		{"codex", `{"prompt":"x","output_schema":"json"}`, `-32602 argument "output_schema" is not a JSON Schema answers can be checked against: a schema is a JSON object, not "json"`},
		{"codex", `{"prompt":"x","output_schema":{"type":"bogus"}}`, `-32602 argument "output_schema" is not a JSON Schema answers can be checked against: /type: bogus is not a JSON type`},
		{"agent_reply", `{"agent_id":"` + arch + `","prompt":"x","output_schema":{"$ref":"https://example.com/s.json"}}`, `-32602 argument "output_schema" is not a JSON Schema answers can be checked against: loading https://example.com/s.json: cannot resolve remote schemas: no loader passed to Schema.Resolve`},
		{"codex-reply", `{"agent_id":"` + arch + `","prompt":"x","steer":true,"output_schema":{}}`, `-32602 steer adds the prompt to the running turn, which was not asked for an output schema: give output_schema without steer (the reply then waits for a turn of its own)`},
		{"codex-reply", `{"agent_id":"` + arch + `","prompt":"x","steer":"yes"}`, `-32602 argument "steer" must be a boolean`},
		{"agent_fork", `{"identity":"dev-1"}`, `-32602 argument "agent_id" is required`},
		{"agent_fork", `{"agent_id":"codex-nope","identity":"dev-1"}`, `-32002 no session with agent_id "codex-nope"`},
		{"agent_fork", `{"agent_id":"` + arch + `"}`, `-32602 argument "identity" is required: the fork is a member of the team of its own`},
		{"agent_fork", `{"agent_id":"` + arch + `","identity":"arch"}`, `-32001 identity conflict: "arch" is already bound to agent_id "` + arch + `"`},
		{"agent_fork", `{"agent_id":"` + arch + `","identity":"dev-1","base":"main"}`, `-32602 base is where an isolated fork's branch starts: give it with isolation "worktree"`},
		{"agent_fork", `{"agent_id":"` + arch + `","identity":"dev-1","thread_id":"t"}`, `-32602 unknown argument(s) for agent_fork: thread_id (expected one of: agent_id, identity, prompt, isolation, base, background, output_schema)`},
		{"agent_merge", `{"agent_id":"codex-nope"}`, `-32002 no session with agent_id "codex-nope"`},
		{"agent_merge", `{"agent_id":"` + arch + `","check":5}`, `-32602 argument "check" must be a string`},
		{"agent_merge", `{"agent_id":"` + arch + `","into":"main"}`, `-32602 unknown argument(s) for agent_merge: into (expected one of: agent_id, strategy, message, check, on_conflict, to)`},
	}
	for _, tt := range tests {
		_, err := h.call(tt.tool, tt.args)
		got := "no error"
		if err != nil {
			got = wireError(err)
		}
		if got != tt.want {
			t.Errorf("%s %s:\n got  %s\n want %s", tt.tool, tt.args, got, tt.want)
		}
	}
	if n := len(h.fb.Prompts()) - before; n != 0 {
		t.Errorf("%d turns reached Codex: %s", n, strings.Join(h.fb.Prompts()[before:], " | "))
	}
}
