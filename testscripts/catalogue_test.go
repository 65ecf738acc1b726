//go:build unix

package testscripts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// TestBadInputCatalogue drives `atm-agent-mcp serve` (against mockcodex,
// and mockacp as the ACP agents of catalogueHome) with the kinds of bad
// input a client, a team's files, Codex, another agent or the operating
// system can produce, one table row each. For every row: the answer is a
// clear JSON-RPC error or an isError result naming the problem (or, where
// the input deserves none, nothing); serve keeps serving (the next request
// is answered); stdout holds only JSON-RPC; at the end the team's files
// hold everything they held, nothing overwritten; and no process that
// serve started is left.
func TestBadInputCatalogue(t *testing.T) {
	t.Parallel() // its own home and serve; most of its 20 s is waiting (answers that must not come, big lines)
	home := catalogueHome(t)
	bigRead := strings.Repeat("x", 16<<20)
	tests := []struct {
		name string
		send string // raw text written to stdin (a newline is added)
		// want matches the answer: the response to the request of id "c"
		// (or the error with a null id for unreadable input), as
		// "code message" or the result's text; "" wants no answer at all.
		want string
	}{
		// Framing and JSON-RPC.
		{"malformed JSON", `{"jsonrpc":"2.0","id":"c","method":`, `^-32700 `},
		{"a batch", `[{"jsonrpc":"2.0","id":"c","method":"ping"}]`, `^-32600 JSON-RPC batches are not supported`},
		{"a number", `42`, `^-32600 `},
		{"a string", `"hello"`, `^-32600 `},
		{"no jsonrpc member", `{"id":"c","method":"ping"}`, `^-32600 .*jsonrpc`},
		{"no method", `{"jsonrpc":"2.0","id":"c"}`, `^-32600 `},
		{"an object as id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `^-32600 .*id`},
		{"params an array", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":[1]}`, `^-32602 tools/call needs params`},
		{"16 MiB line", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"agent_sessions","arguments":{"x":"` + bigRead + `"}}}`, `^-32602 unknown argument\(s\) for agent_sessions: x `},
		{"64 MiB line", `{"jsonrpc":"2.0","id":"c","method":"ping","params":{"x":"` + strings.Repeat("y", 64<<20) + `"}}`, `^-32600 .*(too large|limit)`},
		{"invalid UTF-8", "\xff\xfe{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"ping\"}", `^-32700 `},
		{"NUL bytes", "\x00\x00", `^-32700 `},
		{"a response to an id never sent", `{"jsonrpc":"2.0","id":999,"result":{}}`, ``},
		{"cancelled for an unknown id", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`, ``},
		{"an unknown method", `{"jsonrpc":"2.0","id":"c","method":"bogus/method"}`, `^-32601 method not found: bogus/method`},
		{"an unknown tool", call("nope", `{}`), `^-32602 unknown tool "nope"`},
		// Tool arguments: missing, wrong-typed, unknown.
		{"codex without prompt", call("codex", `{"identity":"arch"}`), `^-32602 argument "prompt" is required`},
		{"codex prompt not a string", call("codex", `{"prompt":7,"identity":"arch"}`), `^-32602 argument "prompt" must be a string`},
		{"codex unknown argument", call("codex", `{"prompt":"x","colour":"red"}`), `^-32602 unknown argument\(s\) for codex: colour`},
		{"codex-reply without agent_id", call("codex-reply", `{"prompt":"x"}`), `^-32602 codex-reply needs agent_id`},
		{"codex-reply to no session", call("codex-reply", `{"agent_id":"codex-nope","prompt":"x"}`), `^-32002 no session with agent_id "codex-nope"`},
		{"atm_send without to", call("atm_send", `{"identity":"proxy","message":"x"}`), `^-32602 argument "to" is required`},
		{"atm_read limit not a number", call("atm_read", `{"identity":"proxy","limit":"3"}`), `^-32602 argument "limit" must be an integer`},
		{"agent_wait negative timeout", call("agent_wait", `{"agent_id":"codex-nope","timeout_secs":-1}`), `^-32002 |^-32602 `},
		{"agent_respond bad answer", call("agent_respond", `{"agent_id":"codex-nope","answer":"maybe"}`), `^-32002 |^-32602 `},
		{"agent_restart_codex unknown argument", call("agent_restart_codex", `{"now":true}`), `^-32602 unknown argument\(s\) for agent_restart_codex: now`},
		// Other agent kinds: agent_start and agent_reply refuse before
		// anything is recorded or started.
		{"agent_start of an unknown agent", call("agent_start", `{"agent":"nope","prompt":"say hi","identity":"x1"}`), `^-32602 unknown agent "nope": the agents are codex, .*\bmock\b.* \(define others in \[plugins\.atm-agent-mcp\.agents\.<name>\]\)`},
		{"agent_start agent not a string", call("agent_start", `{"agent":42,"prompt":"say hi","identity":"x1"}`), `^-32602 argument "agent" must be a string`},
		{"agent_start with sandbox", call("agent_start", `{"agent":"mock","prompt":"say hi","identity":"x1","sandbox":"read-only"}`), `^-32602 sandbox is a Codex-only setting, which agent_start does not take: start a Codex agent with it through the codex tool$`},
		{"agent_start with thread_id", call("agent_start", `{"agent":"mock","thread_id":"t-1","identity":"x1"}`), `^-32602 thread_id is a Codex-only setting`},
		{"agent_start unknown argument", call("agent_start", `{"agent":"mock","prompt":"say hi","identity":"x1","colour":"red"}`), `^-32602 unknown argument\(s\) for agent_start: colour \(expected one of: agent, prompt,`},
		{"agent_start without prompt", call("agent_start", `{"agent":"mock","identity":"x1"}`), `^-32602 argument "prompt" is required \(or agent_file, or agent_id to resume\)`},
		{"agent_start identity ../x", call("agent_start", `{"agent":"mock","prompt":"say hi","identity":"../x"}`), `^-32602 .*identity "\.\./x" contains "\.\."`},
		{"agent_start of no session", call("agent_start", `{"agent":"mock","agent_id":"codex-nope","prompt":"say hi"}`), `^-32002 no session with agent_id "codex-nope"`},
		{"agent_reply without agent_id", call("agent_reply", `{"prompt":"say hi"}`), `^-32602 argument "agent_id" is required`},
		{"agent_reply to no session", call("agent_reply", `{"agent_id":"codex-nope","prompt":"say hi"}`), `^-32002 no session with agent_id "codex-nope"`},
		{"agent_reply unknown argument", call("agent_reply", `{"agent_id":"codex-nope","prompt":"say hi","sandbox":"read-only"}`), `^-32602 unknown argument\(s\) for agent_reply: sandbox`},
		{"agent_reply prompt not a string", call("agent_reply", `{"agent_id":"codex-nope","prompt":["say hi"]}`), `^-32602 argument "prompt" must be a string`},
		// Identities and teams.
		{"identity 300 characters", call("codex", `{"prompt":"x","identity":"`+strings.Repeat("i", 300)+`"}`), `^-32602 .*identity name is 300 bytes, longer than the limit`},
		{"identity ../x", call("codex", `{"prompt":"x","identity":"../x"}`), `^-32602 .*identity "\.\./x" contains "\.\."`},
		{"identity /etc", call("codex", `{"prompt":"x","identity":"/etc"}`), `^-32602 .*identity "/etc" contains a path separator`},
		{"identity a/b", call("codex", `{"prompt":"x","identity":"a/b"}`), `^-32602 .*contains a path separator`},
		{"identity with NUL", call("codex", `{"prompt":"x","identity":"a\u0000b"}`), `^-32602 .*contains a NUL or control character`},
		{"identity with a bidi override", call("codex", `{"prompt":"x","identity":"ab\u202ec"}`), `^-32602 .*invisible formatting character U\+202E`},
		{"empty identity to send as", call("atm_send", `{"identity":" ","to":"arch","message":"x"}`), `^-32602 `},
		{"recipient ../x", call("atm_send", `{"identity":"proxy","to":"../x","message":"x"}`), `^-32602 .*"\.\./x"`},
		{"sending as another identity", call("atm_send", `{"identity":"arch","to":"dev-1","message":"x"}`), `^-3200[12] identity "arch" is not held by this proxy`},
		{"an oversized mail body", call("atm_send", `{"identity":"proxy","to":"arch","message":"`+strings.Repeat("m", 1<<20+1)+`"}`), `limit of 1048576 bytes`},
		// The team's files.
		{"an inbox that is not JSON", call("atm_read", `{"identity":"proxy"}`), `proxy\.json`},
		{"an inbox that is an object", call("atm_pending_count", `{"identity":"proxy"}`), `proxy\.json`},
		{"an inbox entry missing keys", call("atm_send", `{"identity":"proxy","to":"qa","message":"to qa"}`), `^sent|"sent"|delivered|to qa|qa`},
		// The child.
		{"a child that writes garbage", call("codex", `{"prompt":"GARBAGE then reply","identity":"dev-1"}`), `MOCK_REPLY: GARBAGE then reply`},
		{"a child that hangs", call("codex-reply", `{"agent_id":"$DEV1","prompt":"HANG"}`), `^-32006 codex turn timed out`},
		{"a child that crashes mid-turn", call("codex", `{"prompt":"CRASH=SIGKILL","identity":"arch"}`), `^-32005 codex child process is not running: killed by signal killed.*agent_restart_codex`},
		// An ACP agent child (mockacp): each session has its own process, so
		// a fault fails only the call, and the next turn starts it again.
		{"an ACP agent that hangs at initialize", call("agent_start", `{"agent":"hanger","prompt":"say hi","identity":"x1"}`), `^-32005 hanger could not be started: .*initialize: no answer after 3s .*; atm-agent-mcp doctor checks its command; the next call starts it again \(no session was kept: identity "x1" is free\)$`},
		{"an ACP agent that floods at initialize", call("agent_start", `{"agent":"flood","prompt":"say hi","identity":"x1"}`), `^-32005 flood could not be started: stopped: it wrote [0-9]{5,} lines in a row that are not JSON-RPC on stdout, and 10000 is the limit \(killed by signal killed\).*\(no session was kept: identity "x1" is free\)$`},
		{"the identity those left free", call("agent_start", `{"agent":"mock","prompt":"say x1 is free","identity":"x1"}`), `^x1 is free$`},
		{"an ACP agent that writes a few bad lines", call("agent_start", `{"agent":"mock","prompt":"garbage 3\nsay ready","identity":"m1"}`), `^ready$`},
		{"agent_start codex of an ACP session", call("agent_start", `{"agent":"codex","agent_id":"$M1","prompt":"say hi"}`), `^-32602 session mock-\w+ \(m1\) runs agent "mock", not "codex": resume it without agent`},
		{"an ACP agent whose turn hangs", call("agent_reply", `{"agent_id":"$M1","prompt":"say partial\nhang"}`), `^-32006 mock turn timed out after 3s \(agent_id mock-\w+\); the next turn of the session starts a new mock process`},
		{"an ACP agent that crashes mid-turn", call("agent_reply", `{"agent_id":"$M1","prompt":"say going down\ncrash 3"}`), `^-32005 mock agent process is not running: exited with code 3 \(mockacp: crashing as told\); the next turn`},
		{"an ACP agent that floods mid-turn", call("agent_reply", `{"agent_id":"$M1","prompt":"garbage 20000\nsay lost"}`), `^-32005 mock agent process is not running: stopped: it wrote 1[0-9]{4} lines in a row that are not JSON-RPC on stdout, and 10000 is the limit \(killed by signal killed\); the next turn`},
		// This agent cannot reopen a session: the turn says it ran on a new one.
		{"the ACP session after its faults", call("agent_reply", `{"agent_id":"$M1","prompt":"say alive"}`),
			`(?s)^\[Not the same thread: the agent's thread mock-\w+ could not be continued \(the agent offers no way to reopen a session .*\)\. This turn ran on a new thread, given nothing of it; the agent does not remember the rest\.\]\n\nalive$`},
		// Structured output and forks of an agent that can do neither
		// itself: the schema is asked for in the prompt and the answer
		// checked; the fork is told the source's messages.
		{"an output_schema that is no schema", call("agent_reply", `{"agent_id":"$M1","prompt":"say {}","output_schema":"an object"}`),
			`^-32602 argument "output_schema" is not a JSON Schema answers can be checked against: a schema is a JSON object, not "an object"$`},
		{"an answer that does not match its schema", call("agent_reply", `{"agent_id":"$M1","prompt":"say not json","output_schema":{"type":"object"}}`),
			`(?s)^The answer is not JSON: .*\n\nThe agent's answer was:\nnot json$`},
		{"a fork of an unknown session", call("agent_fork", `{"agent_id":"mock-nope","identity":"m2"}`), `^-32002 no session with agent_id "mock-nope"`},
		{"a fork without identity", call("agent_fork", `{"agent_id":"$M1"}`), `^-32602 argument "identity" is required`},
		{"a fork of an ACP session", call("agent_fork", `{"agent_id":"$M1","identity":"m2","prompt":"say forked"}`),
			`(?s)^\[forked mock-\w+ \(m2\) from mock-\w+ \(m1\): its agent cannot fork a thread, so its first turn is told the source's recent messages and last result\]\n\nforked$`},
		{"closing the fork's source", call("agent_close", `{"agent_id":"$M1"}`), `^session mock-\w+ \(m1\) is closed`},
		{"a fork of a closed session", call("agent_fork", `{"agent_id":"$M1","identity":"m3"}`),
			`^-32003 session mock-\w+ is closed: only a live session is forked; resume it first \(codex or agent_start with its agent_id\)$`},
	}
	if len(tests) < 40 {
		t.Fatalf("the catalogue has %d cases, want at least 40", len(tests))
	}
	tag := realacp.Tag(t) // checked at the end: nothing serve started is left
	p := startServeEnv(t, home.dir, false, []string{realacp.TagEnv + "=" + tag},
		"serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex", "--timeout", "3")
	p.roundTrip(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`, "init")
	// The agent_id of a row's result is saved for the later rows as $NAME.
	saveAs := map[string]string{"a child that writes garbage": "DEV1", "an ACP agent that writes a few bad lines": "M1"}
	vars := map[string]string{}
	for i, tt := range tests {
		send := tt.send
		for k, v := range vars {
			send = strings.ReplaceAll(send, "$"+k, v)
		}
		got, raw := p.exchangeMsg(t, send, tt.want != "")
		if tt.want == "" {
			if got != "" {
				t.Errorf("%d %s: an answer to input that deserves none: %s", i, tt.name, clipLog(got, 300))
			}
		} else if !regexp.MustCompile(tt.want).MatchString(got) {
			t.Errorf("%d %s:\n got  %s\n want %s", i, tt.name, clipLog(got, 400), tt.want)
		}
		// serve keeps serving.
		if pong := p.roundTrip(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"after-%d","method":"tools/call","params":{"name":"agent_sessions","arguments":{}}}`, i), fmt.Sprintf("after-%d", i)); pong.Error != nil {
			t.Fatalf("%d %s: serve stopped serving: %s", i, tt.name, pong.Error)
		}
		if v := saveAs[tt.name]; v != "" && raw != nil {
			vars[v] = agentIDRe.FindString(string(raw.Result))
		}
	}
	// The same request id twice while the first is in flight: the second is
	// refused, the first answered.
	p.restart(t) // the child crashed above
	before := p.count()
	p.send(t, call("codex", `{"prompt":"SLOW=1","identity":"qa"}`))
	dup := p.exchange(t, call("agent_sessions", `{}`), true)
	if !strings.HasPrefix(dup, "-32600 request id \"c\" is already in use") {
		t.Errorf("the same id twice: %s", dup)
	}
	// The first is answered: its turn's reply, or, when the lead's mail to
	// qa left unread above ("to qa") was steered into that running turn
	// (busy_mail's default for the lead's mail), the reply to that mail.
	if first := p.waitAnswer(t, before); !strings.Contains(first, "MOCK_REPLY: SLOW=1") && !strings.Contains(first, "to qa") {
		t.Errorf("the first request of the id: %s", first)
	}
	p.close(t)
	home.checkKept(t)
	if bad := p.impure(); len(bad) > 0 {
		t.Errorf("stdout had %d lines that are not JSON-RPC, the first: %q", len(bad), clipLog(bad[0], 200))
	}
}

// TestBadStartAndEnd: what the catalogue cannot do on one running serve —
// Content-Length framing gone wrong, files corrupted before the start, a
// second instance with the same identity, stdin closed and SIGTERM in the
// middle of a turn.
func TestBadStartAndEnd(t *testing.T) {
	t.Run("bad Content-Length headers", func(t *testing.T) {
		home := catalogueHome(t)
		p := startServeFramed(t, home.dir, true, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex")
		frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
		// The framing is chosen by the first message.
		p.roundTripRaw(t, frame(`{"jsonrpc":"2.0","id":"first","method":"ping"}`), "first")
		ping := func(id string) string { return `{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}` }
		for _, tt := range []struct{ name, raw, want string }{
			{"missing", "Content-Type: x\r\n\r\n" + ping("c"), `^-32600 .*no Content-Length header`},
			{"negative", "Content-Length: -5\r\n\r\n", `^-32600 .*bad Content-Length "-5"`},
			{"not a number", "Content-Length: ten\r\n\r\n", `^-32600 .*bad Content-Length "ten"`},
			{"huge", "Content-Length: 99999999999999\r\n\r\n", `^-32600 .*exceeds the limit`},
			// The body the length promises takes bytes that were not meant
			// for it: a parse error, then the next message is read.
			{"larger than the body", "Content-Length: 60\r\n\r\n" + ping("c") + strings.Repeat("x", 60-len(ping("c"))), `^-32700 `},
		} {
			got := p.exchangeRaw(t, tt.raw)
			if !regexp.MustCompile(tt.want).MatchString(got) {
				t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
			}
			if m := p.roundTripRaw(t, frame(ping("after")), "after"); m.Error != nil {
				t.Fatalf("%s: serve stopped serving: %s", tt.name, m.Error)
			}
		}
		p.close(t)
		if bad := p.impure(); len(bad) > 0 {
			t.Errorf("stdout had lines that are not Content-Length JSON-RPC: %q", bad[0])
		}
	})
	t.Run("a corrupted registry", func(t *testing.T) {
		home := catalogueHome(t)
		reg := filepath.Join(home.dir, ".config", "atm", "agent-sessions", "dev", "proxy", "registry.json")
		if err := os.MkdirAll(filepath.Dir(reg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(reg, []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(mustLook(t, "atm-agent-mcp"), "sessions", "--team", "dev", "--identity", "proxy").CombinedOutput()
		_ = err
		p := startServe(t, home.dir, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex")
		m := p.roundTrip(t, call("agent_sessions", `{}`), "c")
		if m.Error != nil {
			t.Errorf("serve over a corrupted registry: %s (sessions said %s)", m.Error, out)
		}
		p.close(t)
		entries, _ := filepath.Glob(filepath.Join(filepath.Dir(reg), "registry.json*"))
		kept := false
		for _, e := range entries {
			if b, _ := os.ReadFile(e); string(b) == "{not json" {
				kept = true
			}
		}
		if !kept {
			t.Errorf("the corrupted registry was overwritten without a copy: %v", entries)
		}
	})
	t.Run("a corrupted claim file", func(t *testing.T) {
		home := catalogueHome(t)
		dir := filepath.Join(home.dir, ".config", "atm", "agent-sessions", "dev")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A claim left by a dead process, its diagnostics garbage.
		if err := os.WriteFile(filepath.Join(dir, "proxy.lock"), []byte("\x00\x01garbage{"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := startServe(t, home.dir, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex")
		if m := p.roundTrip(t, call("agent_sessions", `{}`), "c"); m.Error != nil {
			t.Errorf("serve over a corrupted claim file: %s", m.Error)
		}
		p.close(t)
	})
	t.Run("a second instance with the same identity", func(t *testing.T) {
		home := catalogueHome(t)
		p := startServe(t, home.dir, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex")
		p.roundTrip(t, call("agent_sessions", `{}`), "c")
		cmd := exec.Command(mustLook(t, "atm-agent-mcp"), "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex")
		cmd.Dir, cmd.Env = home.dir, home.env()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil || stdout.Len() != 0 || !strings.Contains(stderr.String(), `already claimed`) || !strings.Contains(stderr.String(), "--identity") {
			t.Errorf("second instance: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
		}
		p.close(t)
	})
	for _, how := range []string{"stdin closed", "SIGTERM"} {
		t.Run(how+" mid-turn", func(t *testing.T) {
			home := catalogueHome(t)
			p := startServe(t, home.dir, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex")
			p.roundTrip(t, call("codex", `{"prompt":"hello","identity":"arch"}`), "c")
			p.send(t, strings.Replace(call("codex", `{"prompt":"SLOW=2","identity":"dev-1"}`), `"id":"c"`, `"id":"slow"`, 1))
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			if how == "SIGTERM" {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				p.stdin.Close()
			}
			if err := p.waitExit(20 * time.Second); err != nil {
				t.Fatalf("serve after %s: %v", how, err)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("serve took %s to exit", d)
			}
			sums, _ := filepath.Glob(filepath.Join(home.dir, ".config", "atm", "agent-sessions", "dev", "arch", "*", "summary.md"))
			if len(sums) == 0 {
				t.Errorf("no summary written for arch at shutdown")
			}
			if bad := p.impure(); len(bad) > 0 {
				t.Errorf("stdout had lines that are not JSON-RPC: %q", bad[0])
			}
		})
	}
}

// call is a tools/call request with id "c".
func call(tool, args string) string {
	return `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func mustLook(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// catalogueEnv is a temporary ATM home with team dev (proxy, arch, dev-1,
// qa, and x1 and m1 for other agent kinds), inboxes in every bad shape and
// a configuration of mock ACP agents, whose bytes are checked at the end.
type catalogueEnv struct {
	dir   string
	files map[string][]byte // path → the bytes it must still hold
}

func catalogueHome(t *testing.T) *catalogueEnv {
	dir := t.TempDir()
	team := filepath.Join(dir, ".claude", "teams", "dev")
	conf := filepath.Join(dir, ".config", "atm")
	for _, d := range []string{filepath.Join(team, "inboxes"), conf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := &catalogueEnv{dir: dir, files: map[string][]byte{}}
	write := func(p, body string, keep bool) {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if keep {
			h.files[p] = []byte(body)
		}
	}
	write(filepath.Join(team, "config.json"), `{"name":"dev","members":[{"name":"proxy","agentId":"proxy@dev"},{"name":"arch","agentId":"arch@dev"},{"name":"dev-1","agentId":"dev-1@dev"},{"name":"qa","agentId":"qa@dev"},{"name":"x1","agentId":"x1@dev"},{"name":"m1","agentId":"m1@dev"},{"name":"m2","agentId":"m2@dev"}]}`, true)
	write(filepath.Join(team, "inboxes/proxy.json"), "this is not JSON {", true)
	write(filepath.Join(team, "inboxes/dev-1.json"), `{"from":"x","text":"an object, not an array"}`, true)
	// Entries missing keys: kept, and the new message appended after them.
	write(filepath.Join(team, "inboxes/qa.json"), `[{"text":"no from, no timestamp"},{"from":"arch"}]`, false)
	// ACP agents (the mock agent): one that works (its prompts say how it
	// fails), one that never answers initialize, one that floods its stdout
	// with more bad lines than the backend takes (childproc.MaxGarbageRun).
	write(filepath.Join(conf, "config.toml"), `[plugins.atm-agent-mcp.agents.mock]
command = "mockacp"

[plugins.atm-agent-mcp.agents.hanger]
command = "mockacp"
env = { MOCKACP_HANG_INIT = "1" }

[plugins.atm-agent-mcp.agents.flood]
command = "mockacp"
env = { MOCKACP_GARBAGE = "20000" }
`, true)
	return h
}

func (h *catalogueEnv) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + h.dir, "ATM_HOME=" + h.dir, "GIT_CEILING_DIRECTORIES=" + h.dir,
		"MOCKCODEX_VERSION=" + testedAppVersion, "TMPDIR=" + os.TempDir()}
}

// checkKept checks that the files that serve could not parse still hold
// their bytes, and that the inbox with incomplete entries kept them.
func (h *catalogueEnv) checkKept(t *testing.T) {
	for p, want := range h.files {
		if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("%s was changed:\n got  %q\n want %q", p, got, want)
		}
	}
	qa, _ := os.ReadFile(filepath.Join(h.dir, ".claude", "teams", "dev", "inboxes", "qa.json"))
	for _, s := range []string{"no from, no timestamp", `"arch"`, "to qa"} {
		if !bytes.Contains(qa, []byte(s)) {
			t.Errorf("qa's inbox lost %q: %s", s, qa)
		}
	}
}

// serveProc is one serve under test, driven over raw stdin and stdout.
type serveProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	header bool // Content-Length framing

	mu     sync.Mutex
	msgs   []*jsonrpcframe.Message
	bad    []string
	notify chan struct{}
	done   chan error
	stderr bytes.Buffer
}

func startServe(t *testing.T, dir string, args ...string) *serveProc {
	t.Helper()
	return startServeFramed(t, dir, false, args...)
}

// startServeFramed starts serve; with header the test speaks Content-Length
// framing to it.
func startServeFramed(t *testing.T, dir string, header bool, args ...string) *serveProc {
	t.Helper()
	return startServeEnv(t, dir, header, nil, args...)
}

// startServeEnv is startServeFramed with extra environment variables
// (later ones win).
func startServeEnv(t *testing.T, dir string, header bool, extra []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(mustLook(t, "atm-agent-mcp"), args...)
	cmd.Dir = dir
	cmd.Env = append((&catalogueEnv{dir: dir}).env(), extra...)
	p := &serveProc{cmd: cmd, header: header, notify: make(chan struct{}, 1), done: make(chan error, 1)}
	cmd.Stderr = &syncWriter{mu: &p.mu, w: &p.stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stdout)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			p.mu.Lock()
			t.Logf("serve's stderr:\n%s", clipLog(p.stderr.String(), 6000))
			p.mu.Unlock()
		}
	})
	return p
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *syncWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// read keeps every message serve writes, and every line that is not one.
func (p *serveProc) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 1<<20)
	hr := jsonrpcframe.NewHeaderReader(br, nil)
	for {
		var line []byte
		var err error
		if p.header {
			var m *jsonrpcframe.Message
			m, err = hr.Read()
			if err == nil {
				p.add(m, "")
				continue
			}
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				p.add(nil, me.Detail)
				continue
			}
		} else {
			line, err = br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				m, perr := jsonrpcframe.Parse(bytes.TrimSpace(line))
				if perr != nil {
					p.add(nil, string(line))
				} else {
					p.add(m, "")
				}
			}
		}
		if err != nil {
			p.done <- p.cmd.Wait()
			return
		}
	}
}

func (p *serveProc) add(m *jsonrpcframe.Message, bad string) {
	p.mu.Lock()
	if m != nil {
		p.msgs = append(p.msgs, m)
	} else {
		p.bad = append(p.bad, bad)
	}
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

func (p *serveProc) impure() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bad...)
}

func (p *serveProc) send(t *testing.T, raw string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, raw+"\n"); err != nil {
		t.Fatalf("write to serve: %v", err)
	}
}

// next waits for the next message after the n seen, up to d.
func (p *serveProc) next(n int, d time.Duration) *jsonrpcframe.Message {
	deadline := time.After(d)
	for {
		p.mu.Lock()
		if len(p.msgs) > n {
			m := p.msgs[n]
			p.mu.Unlock()
			return m
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-deadline:
			return nil
		}
	}
}

func (p *serveProc) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

// exchange writes raw and returns the answer to it: the response of id "c"
// or a null-id error, rendered by answerText; "" when none came (after a
// short wait when none is expected).
func (p *serveProc) exchange(t *testing.T, raw string, expect bool) string {
	t.Helper()
	s, _ := p.exchangeMsg(t, raw, expect)
	return s
}

// exchangeMsg is exchange, with the answer's message (nil without one).
func (p *serveProc) exchangeMsg(t *testing.T, raw string, expect bool) (string, *jsonrpcframe.Message) {
	t.Helper()
	n := p.count()
	p.send(t, raw)
	wait := 60 * time.Second
	if !expect {
		wait = 300 * time.Millisecond
	}
	for deadline := time.Now().Add(wait); ; {
		m := p.next(n, time.Until(deadline))
		if m == nil {
			return "", nil
		}
		n++
		if m.IsResponse() && (m.ID.String() == `"c"` || m.ID.IsZero() || m.ID.String() == "null") {
			return answerText(m), m
		}
	}
}

// waitAnswer waits for the first successful response of id "c" after the
// n messages seen.
func (p *serveProc) waitAnswer(t *testing.T, n int) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		m := p.next(n, time.Until(deadline))
		if m == nil {
			t.Fatal("no answer")
		}
		n++
		if m.IsResponse() && m.ID.String() == `"c"` && m.Error == nil {
			return answerText(m)
		}
	}
}

func (p *serveProc) exchangeRaw(t *testing.T, raw string) string {
	t.Helper()
	n := p.count()
	if _, err := io.WriteString(p.stdin, raw); err != nil {
		t.Fatal(err)
	}
	m := p.next(n, 20*time.Second)
	if m == nil {
		return ""
	}
	return answerText(m)
}

func (p *serveProc) roundTripRaw(t *testing.T, raw, id string) *jsonrpcframe.Message {
	t.Helper()
	n := p.count()
	if _, err := io.WriteString(p.stdin, raw); err != nil {
		t.Fatal(err)
	}
	return p.awaitID(t, n, id)
}

// roundTrip sends a request and returns its response.
func (p *serveProc) roundTrip(t *testing.T, raw, id string) *jsonrpcframe.Message {
	t.Helper()
	n := p.count()
	p.send(t, raw)
	return p.awaitID(t, n, id)
}

func (p *serveProc) awaitID(t *testing.T, n int, id string) *jsonrpcframe.Message {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		m := p.next(n, time.Until(deadline))
		if m == nil {
			t.Fatalf("no response to %s", id)
		}
		n++
		if m.IsResponse() && m.ID.String() == `"`+id+`"` {
			return m
		}
	}
}

// restart restarts a crashed Codex.
func (p *serveProc) restart(t *testing.T) {
	t.Helper()
	if m := p.roundTrip(t, strings.Replace(call("agent_restart_codex", `{}`), `"id":"c"`, `"id":"rs"`, 1), "rs"); m.Error != nil {
		t.Fatalf("agent_restart_codex: %s", m.Error)
	}
}

// close ends serve (stdin EOF) and checks that it exits 0.
func (p *serveProc) close(t *testing.T) {
	t.Helper()
	p.stdin.Close()
	if err := p.waitExit(30 * time.Second); err != nil {
		t.Errorf("serve at stdin EOF: %v", err)
	}
}

func (p *serveProc) waitExit(d time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(d):
		return context.DeadlineExceeded
	}
}

// answerText renders a response: "code message" for an error, the text of
// a tool result, else the result's JSON.
func answerText(m *jsonrpcframe.Message) string {
	if m.Error != nil {
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(m.Error, &e)
		return fmt.Sprint(e.Code, " ", e.Message)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(m.Result, &r) == nil && len(r.Content) > 0 {
		return r.Content[0].Text
	}
	return string(m.Result)
}
