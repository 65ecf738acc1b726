//go:build unix

package testscripts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestREADMERecipes runs the recipes of the README as written, found by
// their "<!-- recipe: NAME -->" markers: the team (a shell block, in an
// empty HOME), the registration (the .mcp.json block: no --identity, so two
// windows with their own ATM_AGENT_MCP_IDENTITY run side by side, and a
// third with a taken identity is told how to pick another), the second
// window's command line (ATM_AGENT_MCP_IDENTITY=lead-2 claude, inline: run
// by bash with the real Claude Code headless as claude, beside a first
// window that holds team-lead; its lead's mail stays pushed), the first
// conversation (each "tool {arguments}" line as a tools/call against
// mockcodex: arch's mail reaches dev-1, a member of the recipe's team), and
// the offline-Codex recipe of docs/configuration.md with the real (pinned)
// Codex and the loopback mock model (doctor passes; a codex call answers
// MOCK_REPLY), and its offline-Claude recipe with the real claude-agent-acp
// and the same mock (doctor finds the agent; agent_start answers
// MOCK_REPLY); neither recipe leaves a file git would show untracked.
func TestREADMERecipes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	baseEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CEILING_DIRECTORIES=" + filepath.Dir(home)}

	// The team.
	_, team := recipe(t, "README.md", "team")
	if out, err := runShell(t, home, baseEnv, team); err != nil {
		t.Fatalf("the team recipe: %v\n%s", err, out)
	}
	var cfg struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	b, err := os.ReadFile(filepath.Join(home, ".claude", "teams", "my-team", "config.json"))
	if err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("the team recipe's config.json (%v): %s", err, b)
	}
	var members []string
	for _, m := range cfg.Members {
		members = append(members, m.Name)
	}

	// The registration: two windows, each with its identity.
	_, reg := recipe(t, "README.md", "register")
	var mcp struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(reg), &mcp); err != nil || len(mcp.MCPServers) != 1 {
		t.Fatalf("the .mcp.json recipe (%v): %s", err, reg)
	}
	var args []string
	for _, s := range mcp.MCPServers {
		if s.Command != "atm-agent-mcp" {
			t.Fatalf("the .mcp.json recipe runs %q", s.Command)
		}
		args = s.Args
	}
	if strings.Contains(strings.Join(args, " "), "--identity") {
		t.Errorf("the shared registration names an identity: %v", args)
	}
	serveEnv := append(append([]string{}, baseEnv...), "ATM_AGENT_MCP_CODEX_BIN="+mockcodexBin)
	w1 := startRecipeServe(t, home, append(serveEnv, "ATM_AGENT_MCP_IDENTITY=window-1"), args)
	w2 := startRecipeServe(t, home, append(serveEnv, "ATM_AGENT_MCP_IDENTITY=window-2"), args)
	for _, w := range []*recipeServe{w1, w2} {
		w.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{}}`)
	}
	third := exec.Command("atm-agent-mcp", args...)
	third.Dir, third.Env = home, append(serveEnv, "ATM_AGENT_MCP_IDENTITY=window-1")
	third.Stdin = strings.NewReader("")
	out, err := third.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "start this window with another value (ATM_AGENT_MCP_IDENTITY=NAME claude)") {
		t.Errorf("a third window with a taken identity (%v): %s", err, out)
	}

	// The first conversation, in window 1.
	_, conv := recipe(t, "README.md", "conversation")
	callRE := regexp.MustCompile(`^([a-z_-]+)\s+(\{.*\})\s*$`)
	agentID := ""
	calls := 0
	for _, line := range strings.Split(conv, "\n") {
		m := callRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		calls++
		argsJSON := regexp.MustCompile(`codex-01k…`).ReplaceAllString(m[2], agentID)
		res := w1.call(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, m[1], argsJSON))
		if strings.Contains(res, `"isError":true`) || strings.Contains(res, `"error":{`) {
			t.Fatalf("%s (team members %v): %s", line, members, res)
		}
		if id := agentIDRe.FindString(res); agentID == "" && id != "" {
			agentID = id
		}
	}
	if calls < 4 || agentID == "" {
		t.Fatalf("the conversation recipe has %d calls (agent_id %q):\n%s", calls, agentID, conv)
	}
	inbox, _ := os.ReadFile(filepath.Join(home, ".claude", "teams", "my-team", "inboxes", "dev-1.json"))
	if !bytes.Contains(inbox, []byte(`"from": "arch"`)) && !bytes.Contains(inbox, []byte(`"from":"arch"`)) {
		t.Errorf("dev-1's inbox has no mail from arch: %s", inbox)
	}

	// The second window, as written, with the real Claude Code (headless:
	// its "claude" runs claude -p): a first window holds the default
	// team-lead; the second is lead-2, its mail is pushed into its session,
	// and an agent started without an identity is codex, not lead-2.
	t.Run("second-window", func(t *testing.T) {
		claude := claudeCLI(t, "2.1.332")
		second := inlineRecipe(t, "README.md", regexp.MustCompile("`(ATM_AGENT_MCP_IDENTITY=[a-z0-9-]+ claude)`"))
		first := startRecipeServe(t, home, append(serveEnv, "CLAUDECODE=1", "CLAUDE_CODE_SESSION_ID=0f3cda09-0000-4000-8000-000000000001"), args)
		if res := first.call(t, "tools/call", `{"name":"agent_status","arguments":{}}`); !strings.Contains(res, `"instance_identity":"team-lead"`) {
			t.Fatalf("the first window: %s", clipLog(res, 2000))
		}
		work, bin := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(work, ".mcp.json"), []byte(reg), 0o644); err != nil {
			t.Fatal(err)
		}
		wrapper := "#!/bin/sh\nexec " + claude + " -p 'Look at the team.' --output-format stream-json --verbose --allowedTools mcp__codex\n"
		if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		api := startAnthropicMock(t, []mockStep{
			func([]mockResult) []mockBlock {
				return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:mcp__codex__agent_status,mcp__codex__codex", "max_results": 5}}}
			},
			func([]mockResult) []mockBlock {
				return []mockBlock{{Tool: "mcp__codex__agent_status", Input: map[string]any{}}}
			},
			func([]mockResult) []mockBlock {
				return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "hello from the second window"}}}
			},
			func([]mockResult) []mockBlock { return []mockBlock{{Text: "looked"}} },
		})
		env := claudeEnv(home, api.URL(), "ATM_AGENT_MCP_CODEX_BIN="+mockcodexBin, "GIT_CEILING_DIRECTORIES="+filepath.Dir(home),
			"PATH="+bin+":"+os.Getenv("PATH"))
		out, err := runShell(t, work, env, second+"\n")
		results := streamToolResults([]byte(out))
		if err != nil || len(results) != 3 {
			t.Fatalf("%s: %v; %d tool results, want 3\n%s", second, err, len(results), clipLog(out, 8000))
		}
		status := strings.ReplaceAll(results[1].Text, `": "`, `":"`)
		for _, want := range []string{`"instance_identity":"lead-2"`, `"path":"socket"`} {
			if results[1].IsError || !strings.Contains(status, want) {
				t.Errorf("agent_status in the second window lacks %s: %s", want, clipLog(status, 3000))
			}
		}
		if strings.Contains(status, "default identity") {
			t.Errorf("agent_status says the lead's mail belongs to an agent: %s", clipLog(status, 3000))
		}
		if res := strings.ReplaceAll(results[2].Text, `": "`, `":"`); results[2].IsError || !strings.Contains(res, `"identity":"codex"`) {
			t.Errorf("an agent without an identity in the second window: %s", clipLog(res, 3000))
		}
	})

	// The offline Codex recipe, with the real Codex.
	t.Run("offline-codex", func(t *testing.T) {
		codex := realcodex.Bin(t, realcodex.AppServer)
		work := t.TempDir()
		mockmodelBin, err := exec.LookPath("mockmodel")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(mockmodelBin, filepath.Join(work, "bin", "mockmodel")); err != nil {
			t.Fatal(err)
		}
		_, offline := recipe(t, filepath.Join("docs", "configuration.md"), "offline-codex")
		env := []string{"PATH=" + filepath.Dir(codex) + ":" + os.Getenv("PATH"), "HOME=" + home,
			"GIT_CEILING_DIRECTORIES=" + filepath.Dir(work)}
		out, err := runShell(t, work, env, offline+"\nenv > recipe.env\n")
		if err != nil {
			t.Fatalf("the offline-Codex recipe: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`(?m)^ok +login +model provider mock `).MatchString(out) {
			t.Errorf("doctor in the recipe:\n%s", out)
		}
		recipeEnv, _ := os.ReadFile(filepath.Join(work, "recipe.env"))
		serveEnv := []string{"PATH=" + filepath.Dir(codex) + ":" + os.Getenv("PATH"), "HOME=" + home, "GIT_CEILING_DIRECTORIES=" + filepath.Dir(work)}
		for _, kv := range strings.Split(string(recipeEnv), "\n") {
			if strings.HasPrefix(kv, "CODEX_HOME=") || strings.HasPrefix(kv, "MOCK_API_KEY=") {
				serveEnv = append(serveEnv, kv)
			}
		}
		if len(serveEnv) != 5 {
			t.Fatalf("the recipe exports no CODEX_HOME or MOCK_API_KEY: %s", recipeEnv)
		}
		s := startRecipeServe(t, work, append(serveEnv, "ATM_AGENT_MCP_IDENTITY=offline"), args)
		s.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{}}`)
		res := s.call(t, "tools/call", `{"name":"codex","arguments":{"identity":"reviewer","prompt":"hello offline","approval-policy":"never"}}`)
		if !strings.Contains(res, "MOCK_REPLY") {
			t.Errorf("the real Codex through the recipe's home: %s", clipLog(res, 3000))
		}
		// The recipe's CODEX_HOME lies in the clone, under /tmp for a
		// clone there (and in this test): Codex then refuses to make its
		// helper binaries ("Refusing to create helper binaries under
		// temporary dir", measured on 0.171.0) and goes on; a command in
		// its sandbox and a patch still run.
		res = s.call(t, "tools/call", `{"name":"codex","arguments":{"identity":"rev-shell","prompt":"RUN_SHELL CMD=echo sandboxed-ok","approval-policy":"never","sandbox":"workspace-write"}}`)
		if !strings.Contains(res, `Output:\nsandboxed-ok`) {
			t.Errorf("a command in Codex's sandbox, with the recipe's home: %s", clipLog(res, 3000))
		}
		res = s.call(t, "tools/call", `{"name":"codex","arguments":{"identity":"rev-patch","prompt":"PATCH=offline/patched.txt","approval-policy":"never","sandbox":"workspace-write"}}`)
		if _, err := os.Stat(filepath.Join(work, "offline", "patched.txt")); err != nil || !strings.Contains(res, "A offline/patched.txt") {
			t.Errorf("a patch, with the recipe's home (%v): %s", err, clipLog(res, 3000))
		}
		checkIgnored(t, work, "bin", "recipe.env")
	})

	// The offline Claude agent recipe, with the real claude-agent-acp.
	t.Run("offline-claude", func(t *testing.T) {
		acp := realacp.Install(t, "claude-agent-acp", "node_modules/.bin/claude-agent-acp")
		work := t.TempDir()
		mockmodelBin, err := exec.LookPath("mockmodel")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(mockmodelBin, filepath.Join(work, "bin", "mockmodel")); err != nil {
			t.Fatal(err)
		}
		_, offline := recipe(t, filepath.Join("docs", "configuration.md"), "offline-claude")
		env := []string{"PATH=" + filepath.Dir(acp) + ":" + os.Getenv("PATH"), "HOME=" + home,
			"GIT_CEILING_DIRECTORIES=" + filepath.Dir(work)}
		out, err := runShell(t, work, env, offline+"\nenv > recipe.env\n")
		if err != nil {
			t.Fatalf("the offline-Claude recipe: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`(?m)^ok +agent:claude +`).MatchString(out) {
			t.Errorf("doctor in the recipe:\n%s", out)
		}
		recipeEnv, _ := os.ReadFile(filepath.Join(work, "recipe.env"))
		serveEnv := append([]string{}, env...)
		for _, kv := range strings.Split(string(recipeEnv), "\n") {
			if strings.HasPrefix(kv, "ATM_CONFIG=") {
				serveEnv = append(serveEnv, kv)
			}
			if strings.HasPrefix(kv, "ANTHROPIC_") {
				t.Errorf("the recipe exports %s into the shell, where the lead's Claude Code would take it too", kv)
			}
		}
		if len(serveEnv) != len(env)+1 {
			t.Fatalf("the recipe exports no ATM_CONFIG: %s", recipeEnv)
		}
		s := startRecipeServe(t, work, append(serveEnv, "ATM_AGENT_MCP_IDENTITY=offline-claude"), args)
		s.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{}}`)
		res := s.call(t, "tools/call", `{"name":"agent_start","arguments":{"agent":"claude","identity":"rev-1","prompt":"hello offline claude"}}`)
		if !strings.Contains(res, "MOCK_REPLY") || !strings.Contains(res, "hello offline claude") {
			t.Errorf("claude-agent-acp through the recipe's configuration: %s", clipLog(res, 3000))
		}
		if ents, err := os.ReadDir(filepath.Join(work, "offline", "claude-agent")); err != nil || len(ents) == 0 {
			t.Errorf("the agent kept nothing in the recipe's CLAUDE_CONFIG_DIR (%v): its state went elsewhere", err)
		}
		checkIgnored(t, work, "bin", "recipe.env")
	})
}

// checkIgnored checks that every entry a recipe run in work left there
// (but the test's own, except) is ignored by git in this repository: the
// recipe leaves no untracked file in a clone.
func checkIgnored(t *testing.T, work string, except ...string) {
	t.Helper()
	ents, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if slices.Contains(except, e.Name()) {
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		cmd := exec.Command("git", "-C", "..", "check-ignore", "-q", "--no-index", name)
		if err := cmd.Run(); err != nil {
			t.Errorf("the recipe leaves %s, which a clone's git status would show untracked (git check-ignore: %v)", name, err)
		}
	}
}

// TestMakeInstall checks that make install says where the binary went and
// whether that directory is on PATH.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("SKIP: no make")
	}
	gobin := t.TempDir()
	for _, tc := range []struct {
		path string
		want string
	}{
		{os.Getenv("PATH"), gobin + " is NOT on your PATH: add it"},
		{gobin + ":" + os.Getenv("PATH"), gobin + " is on your PATH"},
	} {
		cmd := exec.Command("make", "-C", "..", "install")
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "PATH="+tc.path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make install: %v\n%s", err, out)
		}
		for _, want := range []string{"installed " + filepath.Join(gobin, "atm-agent-mcp") + " (atm-agent-mcp ", tc.want} {
			if !strings.Contains(string(out), want) {
				t.Errorf("make install does not say %q:\n%s", want, out)
			}
		}
	}
}

// recipe returns the language and the text of the fenced block that follows
// "<!-- recipe: name -->" in a file of the repository, without the
// block's common indentation.
func recipe(t *testing.T, file, name string) (lang, body string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "<!-- recipe: "+name+" -->" {
			continue
		}
		if i+1 >= len(lines) {
			break
		}
		open := lines[i+1]
		indent := open[:len(open)-len(strings.TrimLeft(open, " "))]
		fence := strings.TrimSpace(open)
		if !strings.HasPrefix(fence, "```") {
			t.Fatalf("%s: no fenced block after the recipe marker %q", file, name)
		}
		var out []string
		for _, l := range lines[i+2:] {
			if strings.TrimSpace(l) == "```" {
				return strings.TrimPrefix(fence, "```"), strings.Join(out, "\n") + "\n"
			}
			out = append(out, strings.TrimPrefix(l, indent))
		}
		t.Fatalf("%s: the recipe %q has no closing fence", file, name)
	}
	t.Fatalf("%s has no recipe %q", file, name)
	return "", ""
}

// inlineRecipe returns the first submatch of re in a file of the
// repository: a command the text gives inline, such as
// `ATM_AGENT_MCP_IDENTITY=lead-2 claude`. It must occur exactly once.
func inlineRecipe(t *testing.T, file string, re *regexp.Regexp) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	ms := re.FindAllStringSubmatch(string(b), -1)
	if len(ms) != 1 {
		t.Fatalf("%s gives %d commands matching %s, want 1", file, len(ms), re)
	}
	return ms[0][1]
}

// runShell runs a shell recipe with bash -e in dir, in a process group of
// its own that is killed when the test ends (a recipe may leave a server
// running in the background), and returns its output.
func runShell(t *testing.T, dir string, env []string, script string) (string, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "recipe-out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = f, f // files: Run does not wait for what the recipe leaves running
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		err = fmt.Errorf("timed out: %v", <-done)
	}
	out, _ := os.ReadFile(f.Name())
	return string(out), err
}

// recipeServe is a serve started by a test, spoken to one JSON-RPC line at a
// time.
type recipeServe struct {
	stdin io.WriteCloser
	lines chan string
	next  int
}

// startRecipeServe starts atm-agent-mcp with args in dir and env; it is
// stopped (stdin closed, killed after 10 s) when the test ends.
func startRecipeServe(t *testing.T, dir string, env, args []string) *recipeServe {
	t.Helper()
	cmd := exec.Command("atm-agent-mcp", args...)
	cmd.Dir, cmd.Env = dir, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &recipeServe{stdin: stdin, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("serve %v stderr:\n%s", args, clipLog(stderr.String(), 4000))
		}
	})
	return p
}

// call sends a request and returns its response line, skipping
// notifications; it fails the test after a minute.
func (p *recipeServe) call(t *testing.T, method, params string) string {
	t.Helper()
	p.next++
	id := p.next
	if _, err := fmt.Fprintf(p.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s: serve ended", method)
			}
			var msg struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal([]byte(line), &msg) == nil && msg.ID != nil && *msg.ID == id {
				return line
			}
		case <-timeout:
			t.Fatalf("%s: no answer within a minute", method)
		}
	}
}
