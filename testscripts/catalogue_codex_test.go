//go:build unix

package testscripts

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBadCodexCatalogue: the catalogue's cases of a Codex that cannot
// serve a first call, on both protocols: a missing Codex binary and a
// first turn that Codex refuses; and of a Codex that floods its stdout
// with lines that are not JSON-RPC, mid-turn and between turns, which is
// stopped: every later answer, agent_status and the restart's report say
// that it wrote such lines, and how many (not only "killed by signal
// killed", nor the limit for the count). For each row the answer names the problem in its message
// (what a client such as Claude Code shows), advises only what will work,
// and serve keeps serving; a row's follow-up shows that nothing was left
// holding the identity.
func TestBadCodexCatalogue(t *testing.T) {
	for _, b := range []struct{ backend, version string }{{"mcp-server", testedMCPVersion}, {"app-server", testedAppVersion}} {
		t.Run(b.backend, func(t *testing.T) {
			t.Parallel()
			// flooded is how a Codex killed for its garbage died: why
			// first, with the count of lines it wrote (the mock writes
			// 20000; the kill comes at 10000, and the lines already in
			// the pipe count too), then the signal.
			const flooded = `stopped: it wrote 1[0-9]{4} lines in a row that are not JSON-RPC on stdout, and 10000 is the limit \(killed by signal killed\)`
			tests := []struct {
				name    string
				bin     string
				send    string // $REV is the agent_id of the corrected retry
				want    string // matches the answer ("code message" or the result's text)
				notWant string // must not appear in the answer; optional
				// until repeats the request (for up to 10 s) until its
				// answer matches want: for a state serve reaches on its
				// own. optional.
				until bool
				// app: only on app-server (steering and sub-agents are
				// its own). busy: a request (id "busy") sent first and
				// not waited for, whose answer comes after the row's.
				// optional.
				app  bool
				busy string
			}{
				{"a missing codex binary", "no-such-codex", call("codex", `{"prompt":"x","identity":"arch"}`),
					`^-32005 codex could not be started: codex binary "no-such-codex" was not found on PATH \(PATH=[^)]+\): .*executable file not found.*; install Codex \(npm install -g @openai/codex\) into a directory on that PATH, or set codex_bin \(--codex-bin\) to an installed Codex and restart the MCP server; after installing it, call agent_restart_codex .*no session was kept: identity "arch" is free`,
					`exited with code 127 (call agent_restart_codex`, false, false, ""},
				{"the same identity again without codex", "no-such-codex", call("codex", `{"prompt":"x","identity":"arch"}`),
					`^-32005 codex could not be started: codex binary "no-such-codex" was not found on PATH`, "identity conflict", false, false, ""},
				{"agent_restart_codex without codex", "no-such-codex", call("agent_restart_codex", `{}`),
					`^-32005 codex could not be started: codex binary "no-such-codex" was not found on PATH.*after installing it, call agent_restart_codex`, "", false, false, ""},
				{"a codex_bin path that is missing", "/nonexistent/codex", call("codex", `{"prompt":"x","identity":"arch"}`),
					`^-32005 codex could not be started: codex binary "/nonexistent/codex" cannot be run: .*no such file or directory; install Codex \(npm install -g @openai/codex\) at that path`, "", false, false, ""},
				{"a first turn codex refuses", "mockcodex", call("codex", `{"prompt":"x","identity":"rev","config":{"mcp_servers":{"lint":{"command":"/nonexistent/lint","required":true}}}}`),
					`(?s)required MCP servers failed to initialize: lint.*Codex refused to start the session; no session was kept: identity "rev" is free`, "", false, false, ""},
				{"the corrected retry with the same identity", "mockcodex", call("codex", `{"prompt":"corrected","identity":"rev"}`),
					`^MOCK_REPLY: corrected`, "identity conflict", false, false, ""},
				// Codex refuses a steer because the turn ended first: the
				// reply is not lost, it runs as a turn of its own.
				{name: "a steer Codex refuses (the turn ended first)", bin: "mockcodex", app: true,
					busy: call("codex-reply", `{"agent_id":"$REV","prompt":"SLOW=30 STEER_RACE busy"}`),
					send: call("codex-reply", `{"agent_id":"$REV","prompt":"steer this","steer":true}`),
					want: `(?s)^MOCK_REPLY: .*steer this$`, notWant: "STEER_RACE"},
				// A sub-agent that does not end: the turn is reported done
				// after sub_agent_wait_secs (2 here), saying so.
				{name: "a sub-agent that never ends", bin: "mockcodex", app: true,
					send: call("codex-reply", `{"agent_id":"$REV","prompt":"SPAWN_SUB=120"}`),
					want: `(?s)^MOCK_DONE: tool output was: .*\n\n\[its sub-agent still running after waiting 2s for them\]$`},
				// Structured output and forks on Codex: a schema that is
				// none, an answer that does not match, a fork of nothing.
				{name: "an output_schema that is no schema", bin: "mockcodex",
					send: call("codex-reply", `{"agent_id":"$REV","prompt":"x","output_schema":{"type":"objekt"}}`),
					want: `^-32602 argument "output_schema" is not a JSON Schema answers can be checked against: /type: objekt is not a JSON type$`},
				{name: "an answer that does not match its schema", bin: "mockcodex",
					send: call("codex-reply", `{"agent_id":"$REV","prompt":"ANSWER={\"n\": \"seven\"}","output_schema":{"type":"object","properties":{"n":{"type":"integer"}}}}`),
					want: `(?s)^The answer does not match the output schema: .*\n\nThe agent's answer was:\n\{"n": "seven"\}$`},
				{name: "a fork of an unknown session", bin: "mockcodex", send: call("agent_fork", `{"agent_id":"codex-nope","identity":"fork-1"}`),
					want: `^-32002 no session with agent_id "codex-nope"`},
				{"a child that floods mid-turn", "mockcodex", call("codex-reply", `{"agent_id":"$REV","prompt":"GARBAGE_FLOOD=20000"}`),
					`^-32005 codex child process is not running: ` + flooded + ` \(call agent_restart_codex to start a new one`, "", false, false, ""},
				{"the next turn after the flood", "mockcodex", call("codex-reply", `{"agent_id":"$REV","prompt":"hello again"}`),
					`^-32005 codex child process is not running: ` + flooded + ` \(call agent_restart_codex`, "", false, false, ""},
				{"a new session after the flood", "mockcodex", call("codex", `{"prompt":"x","identity":"late"}`),
					`^-32005 codex child process is not running: ` + flooded + ` \(call agent_restart_codex`, "", false, false, ""},
				{"agent_status after the flood", "mockcodex", call("agent_status", `{}`),
					`(?s)"recent_crashes": \[\s*\{\s*"at": "[^"]+",\s*"status": "` + flooded + `".*"exit": "` + flooded + `"`, "", false, false, ""},
				{"agent_restart_codex after the flood", "mockcodex", call("agent_restart_codex", `{}`),
					`^Codex restarted \((mcp|app)-server, pid \d+; previous child: ` + flooded + `\)`, "", false, false, ""},
				// The first turn after the restart: on mcp-server a new thread,
				// which the result says.
				{"a child that floods between turns", "mockcodex", call("codex-reply", `{"agent_id":"$REV","prompt":"GARBAGE_FLOOD_AFTER=20000"}`),
					`(?s)^(\[Not the same thread: .* could not be continued \(codex mcp-server cannot continue a thread that another Codex process ran\)\..*\]\n\n)?MOCK_REPLY: .*GARBAGE_FLOOD_AFTER=20000$`, "", false, false, ""},
				{"agent_status once it was stopped", "mockcodex", call("agent_status", `{}`),
					`(?s)"alive": false.*"exit": "` + flooded + `"`, "", true, false, ""},
				{"a new session after a flood between turns", "mockcodex", call("codex", `{"prompt":"x","identity":"later"}`),
					`^-32005 codex child process is not running: ` + flooded + ` \(call agent_restart_codex`, "", false, false, ""},
			}
			procs := map[string]*serveProc{}
			rev := "" // the agent_id of the corrected retry
			for i, tt := range tests {
				if tt.app && b.backend != "app-server" {
					continue
				}
				p := procs[tt.bin]
				if p == nil {
					home := catalogueHome(t)
					p = startServeEnv(t, home.dir, false, []string{"MOCKCODEX_VERSION=" + b.version, "ATM_AGENT_MCP_SUB_AGENT_WAIT_SECS=2"},
						"serve", "--team", "dev", "--identity", "proxy", "--backend", b.backend, "--codex-bin", tt.bin)
					p.roundTrip(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`, "init")
					procs[tt.bin] = p
				}
				send := strings.ReplaceAll(tt.send, "$REV", rev)
				want := regexp.MustCompile(tt.want)
				busyAt := p.count()
				if tt.busy != "" {
					p.send(t, strings.Replace(strings.ReplaceAll(tt.busy, "$REV", rev), `"id":"c"`, `"id":"busy"`, 1))
				}
				got, raw := p.exchangeMsg(t, send, true)
				if tt.busy != "" {
					if m := p.awaitID(t, busyAt, "busy"); m.Error != nil {
						t.Errorf("%d %s: the busy turn: %s", i, tt.name, m.Error)
					}
				}
				for deadline := time.Now().Add(10 * time.Second); tt.until && !want.MatchString(got) && time.Now().Before(deadline); {
					time.Sleep(50 * time.Millisecond)
					got, raw = p.exchangeMsg(t, send, true)
				}
				if tt.name == "the corrected retry with the same identity" && raw != nil {
					rev = agentIDRe.FindString(string(raw.Result))
				}
				if !want.MatchString(got) {
					t.Errorf("%d %s:\n got  %s\n want %s", i, tt.name, clipLog(got, 600), tt.want)
				}
				if tt.notWant != "" && strings.Contains(got, tt.notWant) {
					t.Errorf("%d %s: the answer says %q: %s", i, tt.name, tt.notWant, clipLog(got, 600))
				}
				if pong := p.roundTrip(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"after-%d","method":"tools/call","params":{"name":"agent_sessions","arguments":{}}}`, i), fmt.Sprintf("after-%d", i)); pong.Error != nil {
					t.Fatalf("%d %s: serve stopped serving: %s", i, tt.name, pong.Error)
				}
			}
			for _, p := range procs {
				p.close(t)
				if bad := p.impure(); len(bad) > 0 {
					t.Errorf("stdout had %d lines that are not JSON-RPC, the first: %q", len(bad), clipLog(bad[0], 200))
				}
			}
		})
	}
}
