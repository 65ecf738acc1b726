// Package demo plays a scripted MCP conversation through the atm-agent-mcp
// binary against mockcodex and prints a readable transcript: two Codex agents
// with identities start, each in a git worktree and on a branch of its own
// (isolation "worktree"), each commits there while the project's own
// checkout stays clean; one mails the other through its own team tools, the
// mail arrives as a turn of the other, agent_sessions lists both; the lead
// reviews one's change (agent_diff) and merges both (agent_merge) into the
// project's branch; the shutdown writes their summaries and keeps their
// worktrees for a resume (atm-agent-mcp worktrees lists them), and `git log
// --oneline` shows the work merged. `make demo` runs it; it needs git.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Config says where the programs are.
type Config struct {
	// Bin is the atm-agent-mcp binary. required.
	Bin string
	// Codex is the mock Codex binary (mockcodex). required.
	Codex string
	// Home is the ATM home to use. optional: "" means a temporary one,
	// removed afterwards.
	Home string
	// Out receives the transcript. required.
	Out io.Writer
	// Timeout bounds the whole demo. optional: 0 means 60 s.
	Timeout time.Duration
}

// Run plays the demo.
func Run(cfg Config) error {
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	home := cfg.Home
	if home == "" {
		dir, err := os.MkdirTemp("", "atm-agent-mcp-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		home = dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	d := &demo{out: cfg.Out, home: home}
	return d.run(ctx, cfg)
}

type demo struct {
	out  io.Writer
	home string

	w      jsonrpcframe.Writer
	mu     sync.Mutex
	next   int64
	resps  map[jsonrpcframe.ID]chan *jsonrpcframe.Message
	events chan *jsonrpcframe.Message
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demo) run(ctx context.Context, cfg Config) error {
	team := filepath.Join(d.home, ".claude", "teams", "demo")
	if err := os.MkdirAll(filepath.Join(team, "inboxes"), 0o700); err != nil {
		return err
	}
	members := `{"name":"demo","members":[` +
		`{"name":"team-lead","agentId":"team-lead@demo"},{"name":"arch","agentId":"arch@demo"},{"name":"dev-1","agentId":"dev-1@demo"}]}`
	if err := os.WriteFile(filepath.Join(team, "config.json"), []byte(members), 0o600); err != nil {
		return err
	}
	work := filepath.Join(d.home, "project")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	env := append(os.Environ(), "ATM_HOME="+d.home, "CODEX_HOME="+filepath.Join(d.home, ".codex"),
		"GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.com", "GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@example.com")
	if err := os.WriteFile(filepath.Join(work, "auth.go"), []byte("package auth\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "the project"}} {
		if _, err := git(ctx, work, env, args...); err != nil {
			return err
		}
	}
	d.say("== atm-agent-mcp demo: a scripted MCP conversation against a mock Codex")
	d.say("   ATM_HOME=%s (team \"demo\": team-lead, arch, dev-1)", d.home)
	d.say("   project: a git repository with one commit (the agents get worktrees of it)")
	d.say("   $ atm-agent-mcp serve --team demo --identity team-lead --codex-bin mockcodex")
	cmd := exec.CommandContext(ctx, cfg.Bin, "serve", "--team", "demo", "--identity", "team-lead", "--codex-bin", cfg.Codex,
		"--log-file", filepath.Join(d.home, "proxy.log"))
	cmd.Dir = work
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	d.w = jsonrpcframe.NewLineWriter(stdin)
	d.resps = map[jsonrpcframe.ID]chan *jsonrpcframe.Message{}
	d.events = make(chan *jsonrpcframe.Message, 4096)
	go d.read(stdout)

	d.say("")
	d.say("-> initialize")
	r, err := d.call(ctx, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "demo", "version": "1"}})
	if err != nil {
		return err
	}
	var init struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
	}
	_ = json.Unmarshal(r.Result, &init)
	d.say("<- %s %s", init.ServerInfo.Name, init.ServerInfo.Version)

	d.say("-> tools/list   (complete before any Codex child exists)")
	r, err = d.call(ctx, "tools/list", nil)
	if err != nil {
		return err
	}
	var tl struct{ Tools []struct{ Name string } }
	_ = json.Unmarshal(r.Result, &tl)
	var names []string
	for _, t := range tl.Tools {
		names = append(names, t.Name)
	}
	d.say("<- %d tools: %s", len(names), strings.Join(names, ", "))

	d.say("")
	d.say("== two agents, each in a worktree and on a branch of its own (isolation \"worktree\"), each commits there")
	arch, err := d.tool(ctx, "codex", map[string]any{"identity": "arch", "isolation": "worktree",
		"prompt": "RUN_SHELL CMD=echo '// design: tokens expire after 15 min' >> auth.go && git commit -qam 'auth: design' && echo committed on $ATM_BRANCH, ports from $ATM_PORT_BASE"})
	if err != nil {
		return err
	}
	dev, err := d.tool(ctx, "codex", map[string]any{"identity": "dev-1", "isolation": "worktree",
		"prompt": "RUN_SHELL CMD=echo 'package auth; func Refresh() {}' > refresh.go && git add refresh.go && git commit -qm 'auth: token refresh' && echo committed on $ATM_BRANCH, ports from $ATM_PORT_BASE"})
	if err != nil {
		return err
	}
	archID, devID := str(arch["agent_id"]), str(dev["agent_id"])
	for _, who := range []string{"atm/arch", "atm/dev-1", "main"} {
		out, err := git(ctx, work, env, "log", "-1", "--format=%s", who)
		if err != nil {
			return err
		}
		d.say("   $ git log -1 --format=%%s %-9s -> %s", who, out)
	}
	st, err := git(ctx, work, env, "status", "--porcelain")
	if err != nil {
		return err
	}
	if st == "" {
		st = "(clean: the agents never touched the project's own checkout)"
	}
	d.say("   $ git status --porcelain      -> %s", st)

	d.say("")
	d.say("== arch's Codex agent mails dev-1 with its own atm_send tool (it can only send as arch)")
	if _, err := d.tool(ctx, "codex-reply", map[string]any{"agent_id": archID,
		"prompt": `CALL_TOOL=mcp__atm.atm_send ARGS={"to":"dev-1","message":"Please add rate limiting to /token."}`}); err != nil {
		return err
	}
	d.say("   inbox %s:", filepath.Join("~", ".claude", "teams", "demo", "inboxes", "dev-1.json"))
	if b, err := os.ReadFile(filepath.Join(team, "inboxes", "dev-1.json")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			d.say("     %s", line)
		}
	}
	d.say("")
	d.say("== dev-1 is idle: the proxy delivers the mail as a new turn")
	mail, err := d.waitEvent(ctx, devID, "team-mail")
	if err != nil {
		return err
	}
	d.say("<- codex/event for %s (dev-1): the turn's input is the mail envelope:", devID)
	for _, line := range strings.Split(mail, "\n") {
		d.say("     %s", line)
	}

	d.say("")
	s, err := d.tool(ctx, "agent_sessions", map[string]any{})
	if err != nil {
		return err
	}
	_ = s

	d.say("")
	d.say("== the lead reviews dev-1's change and merges both agents' work into its own checkout (main)")
	if _, err := d.tool(ctx, "agent_diff", map[string]any{"agent_id": devID, "stat": true}); err != nil {
		return err
	}
	if err := d.merge(ctx, devID, "auth: token refresh (dev-1)"); err != nil {
		return err
	}
	if err := d.merge(ctx, archID, "auth: design (arch)"); err != nil {
		return err
	}
	log, err := git(ctx, work, env, "log", "--oneline", "main")
	if err != nil {
		return err
	}
	st, err = git(ctx, work, env, "status", "--porcelain")
	if err != nil {
		return err
	}
	if st == "" {
		st = "(clean: the merges moved main and its files, nothing else)"
	}
	d.say("   $ git status --porcelain      -> %s", st)

	d.say("")
	d.say("== the client closes stdin: graceful shutdown, a summary per session")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("proxy exit: %w", err)
	}
	d.say("   proxy exited with code 0")
	for _, who := range []struct{ id, thread, identity string }{
		{archID, str(arch["threadId"]), "arch"}, {devID, str(dev["threadId"]), "dev-1"},
	} {
		p := filepath.Join(d.home, ".config", "atm", "agent-sessions", "demo", who.identity, who.thread, "summary.md")
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("summary of %s: %w", who.identity, err)
		}
		d.say("   %s/summary.md: %q", who.identity, clip(strings.TrimSpace(string(b)), 70))
	}
	d.say("")
	d.say("   $ atm-agent-mcp worktrees --team demo   (serve's exit only unlocked them: a resume re-enters each)")
	list := exec.CommandContext(ctx, cfg.Bin, "worktrees", "--team", "demo")
	list.Dir, list.Env = work, env
	out, err := list.CombinedOutput()
	if err != nil {
		return fmt.Errorf("worktrees: %w: %s", err, out)
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		d.say("     %s", line)
	}
	d.say("")
	d.say("   $ git log --oneline main      (both agents' work, one commit each, on the project's branch)")
	for _, line := range strings.Split(log, "\n") {
		d.say("     %s", line)
	}
	d.say("")
	d.say("== done: the demo's team, sessions and project lived in a temporary directory, removed now; with your own team, resume a session later with `atm-agent-mcp serve --resume <agent_id>`")
	return nil
}

// merge brings an agent's work into the lead's checkout with agent_merge,
// once its turn (and any mail turn that the other's merge started) is
// over: a merge is refused while the agent works.
func (d *demo) merge(ctx context.Context, agentID, message string) error {
	for attempt := 0; ; attempt++ {
		if _, err := d.call(ctx, "tools/call", map[string]any{"name": "agent_wait", "arguments": map[string]any{"agent_id": agentID, "timeout_secs": 30}}); err != nil {
			return err
		}
		_, err := d.tool(ctx, "agent_merge", map[string]any{"agent_id": agentID, "message": message})
		if err == nil || attempt == 4 || !strings.Contains(err.Error(), "is running or waiting") {
			return err
		}
		d.say("   (its turn runs: wait for it, then merge again)")
	}
}

// git runs git in dir and returns its output, trimmed.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, "git", args...)
	c.Dir, c.Env = dir, env
	out, err := c.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (d *demo) read(r io.Reader) {
	lr := jsonrpcframe.NewLineReader(bufio.NewReaderSize(r, 1<<20), nil)
	for {
		m, err := lr.Read()
		if err != nil {
			var bad *jsonrpcframe.MessageError
			if errors.As(err, &bad) {
				continue
			}
			d.mu.Lock()
			for id, ch := range d.resps {
				close(ch)
				delete(d.resps, id)
			}
			d.mu.Unlock()
			return
		}
		switch {
		case m.IsResponse():
			d.mu.Lock()
			ch := d.resps[m.ID]
			delete(d.resps, m.ID)
			d.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.IsNotification() && m.Method == "codex/event":
			select {
			case d.events <- m:
			default:
			}
		}
	}
}

func (d *demo) call(ctx context.Context, method string, params any) (*jsonrpcframe.Message, error) {
	d.mu.Lock()
	d.next++
	id := jsonrpcframe.IntID(d.next)
	ch := make(chan *jsonrpcframe.Message, 1)
	d.resps[id] = ch
	d.mu.Unlock()
	m, err := jsonrpcframe.NewRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	if err := d.w.Write(m); err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errors.New("the proxy closed its stdout")
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// tool calls a tool, prints the call and a short form of the answer, and
// returns its structuredContent.
func (d *demo) tool(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	a, _ := json.Marshal(args)
	d.say("-> tools/call %s %s", name, a)
	r, err := d.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return nil, err
	}
	sc := res.StructuredContent
	switch name {
	case "codex", "codex-reply":
		d.say("<- agent_id=%s identity=%s threadId=%s", str(sc["agent_id"]), str(sc["identity"]), str(sc["threadId"]))
		if w, ok := sc["worktree"].(map[string]any); ok && name == "codex" {
			d.say("   worktree=%s branch=%s", str(w["path"]), str(w["branch"]))
		}
		d.say("   %q", clip(lastLine(str(sc["content"])), 100))
	case "agent_sessions":
		d.say("<- %-32s %-8s %-6s %s", "agent_id", "identity", "state", "thread")
		if list, ok := sc["sessions"].([]any); ok {
			for _, x := range list {
				s, _ := x.(map[string]any)
				d.say("   %-32s %-8s %-6s %s", str(s["agent_id"]), str(s["identity"]), str(s["thread_state"]), str(s["backend_id"]))
			}
		}
	case "agent_diff":
		if len(res.Content) > 0 {
			head, _, _ := strings.Cut(strings.TrimRight(res.Content[0].Text, "\n"), "\n\n") // the stat and the files, not the patch
			for i, line := range strings.Split(head, "\n") {
				d.say(map[bool]string{true: "<- %s", false: "   %s"}[i == 0], line)
			}
		}
	case "agent_merge":
		d.say("<- %s", str(sc["summary"]))
	default:
		if len(res.Content) > 0 {
			d.say("<- %s", clip(res.Content[0].Text, 120))
		}
	}
	if res.IsError {
		return sc, fmt.Errorf("%s failed: %v", name, sc["content"])
	}
	return sc, nil
}

// waitEvent waits for an event of the session whose params contain text
// and returns the user input it carries.
func (d *demo) waitEvent(ctx context.Context, agentID, text string) (string, error) {
	for {
		select {
		case m := <-d.events:
			p := string(m.Params)
			if !strings.Contains(p, `"agent_id":"`+agentID+`"`) || !strings.Contains(p, text) {
				continue
			}
			var ev struct {
				Msg struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"msg"`
			}
			_ = json.Unmarshal(m.Params, &ev)
			if ev.Msg.Type != "user_message" {
				continue
			}
			return ev.Msg.Message, nil
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for the mail turn: %w", ctx.Err())
		}
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
