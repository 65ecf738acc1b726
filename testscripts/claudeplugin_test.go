//go:build unix

package testscripts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pluginDir is the plugin inside the repository, as the marketplace at the
// repository root (.claude-plugin/marketplace.json) names it.
const pluginDir = "agentmcp/claude-plugin/atm-agent-mcp"

// TestClaudePlugin checks the Claude Code plugin and its marketplace with
// the real Claude Code 2.1.332, offline: both pass `claude plugin validate
// --strict`; in an empty HOME, `claude plugin marketplace add <the
// repository>` and `claude plugin install atm-agent-mcp@atm-agent-mcp`
// install it; then a headless session against the loopback Anthropic API
// mock connects the plugin's server (Claude Code's debug log says so),
// offers the model exactly its tools, shows its skill and commands, and
// uses them: the launcher found atm-agent-mcp on PATH, serve
// ran with the identity of the window's environment (ATM_AGENT_MCP_IDENTITY,
// while another serve of the same team holds the default identity: a
// second window), started a mockcodex agent and listed it.
func TestClaudePlugin(t *testing.T) {
	t.Parallel()
	claude := claudeCLI(t, "2.1.332")
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	baseEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", raceExitEnv()}
	claudeCmd := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), claudeTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Dir, cmd.Env = work, baseEnv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// Validation, strict, of the plugin and of the marketplace.
	for _, target := range []string{filepath.Join(repo, pluginDir), repo} {
		out, err := claudeCmd("plugin", "validate", "--strict", "--json", target)
		var report struct {
			Success bool `json:"success"`
			Strict  bool `json:"strict"`
		}
		if err != nil || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &report) != nil || !report.Success || !report.Strict {
			t.Fatalf("claude plugin validate --strict %s: %v\n%s", target, err, out)
		}
	}

	// Install from the repository as a directory marketplace.
	for _, args := range [][]string{
		{"plugin", "marketplace", "add", repo},
		{"plugin", "install", "atm-agent-mcp@atm-agent-mcp"},
	} {
		if out, err := claudeCmd(args...); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	installed, err := os.ReadFile(filepath.Join(home, ".claude", "plugins", "installed_plugins.json"))
	if err != nil || !bytes.Contains(installed, []byte(`"atm-agent-mcp@atm-agent-mcp"`)) {
		t.Fatalf("installed_plugins.json (%v): %s", err, installed)
	}

	// The team, and a first window's serve holding the default identity.
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "window2", "arch")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	serverEnv := []string{"ATM_HOME=" + atmHome, "ATM_TEAM=dev", "ATM_AGENT_MCP_CODEX_BIN=" + mockcodexBin,
		"MOCKCODEX_VERSION=" + testedAppVersion, "GIT_CEILING_DIRECTORIES=" + dir}
	startFirstWindow(t, append(append([]string{}, baseEnv...), serverEnv...), work)

	tool := func(name string) string { return "mcp__plugin_atm-agent-mcp_codex__" + name }
	// The model answers its first request once Claude Code's debug log
	// shows how our server's connection ended: init, printed before that
	// request, waits only about 2 s for a plugin's server
	// (claudecode_connect_test.go), so what was connected and offered is
	// read from the log and from the model's later requests.
	debugLog := filepath.Join(dir, "claude-debug.log")
	var agentID string
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			awaitVerdict(debugLog, pluginServer)
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:" + tool("codex") + "," + tool("agent_sessions"), "max_results": 5}}}
		case r.called(tool("codex")) == 0:
			return []mockBlock{{Tool: tool("codex"), Input: map[string]any{"prompt": "hello from the plugin", "identity": "arch"}}}
		case r.called(tool("agent_sessions")) == 0:
			agentID = agentOf(r, "arch")
			return []mockBlock{{Tool: tool("agent_sessions"), Input: map[string]any{}}}
		}
		return []mockBlock{{Text: "all done"}}
	})
	proxyLog := filepath.Join(dir, "proxy.log")
	env := append(append([]string{}, baseEnv...), serverEnv...)
	env = append(env, "ANTHROPIC_BASE_URL="+api.URL(), "ANTHROPIC_API_KEY=sk-test-offline",
		"ATM_AGENT_MCP_IDENTITY=window2", "ATM_AGENT_MCP_LOG_FILE="+proxyLog, "ATM_AGENT_MCP_LOG_LEVEL=debug")
	cp := runClaudeP(t, claude, work, env, "Start a Codex agent.",
		"--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__plugin_atm-agent-mcp_codex", "--debug-file", debugLog)
	stdout := &cp.stdout
	dump := func() {
		api.dump()
		cp.dump(t, proxyLog)
		logTail(t, "claude's debug log (our server)", debugLog, 0, ourServer)
	}
	if cp.err != nil {
		dump()
		t.Fatalf("claude -p: %v", cp.err)
	}

	// Claude Code connected the plugin's server.
	if got := serverVerdicts(debugLog); len(got) == 0 || !strings.Contains(got[0], ourServer+"Successfully connected") {
		t.Errorf("Claude Code's verdicts on the plugin's server are %q, want a connection first", got)
	}
	// The model was offered the tools of tools.json through it, and no
	// other, in every request after the first (which came before the
	// connection's end): loaded, or deferred (named for ToolSearch).
	var want []string
	for _, name := range toolNames(t) {
		want = append(want, tool(name))
	}
	slices.Sort(want)
	var main []*modelRequest
	for _, r := range api.requests() {
		if r.Main {
			main = append(main, r)
		}
	}
	if len(main) != 4 {
		t.Errorf("%d model requests of the conversation, want 4", len(main))
	}
	for i, r := range main[min(1, len(main)):] {
		if got := offeredTools(r, tool("")); !slices.Equal(got, want) {
			t.Errorf("model request %d offered %d tools of the plugin's server, want the %d of tools.json:\ngot  %v\nwant %v", i+1, len(got), len(want), got, want)
		}
	}

	// What init says: the plugin's skill and commands (loaded with the
	// plugin, before init), and its server, connected or still pending,
	// never failed.
	var initSeen bool
	var results []mockResult
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type          string   `json:"type"`
			Subtype       string   `json:"subtype"`
			IsError       bool     `json:"is_error"`
			Result        string   `json:"result"`
			Skills        []string `json:"skills"`
			SlashCommands []string `json:"slash_commands"`
			MCPServers    []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"mcp_servers"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			dump()
			t.Fatalf("stream-json line is not JSON: %s", sc.Bytes())
		}
		switch {
		case ev.Type == "system" && ev.Subtype == "init":
			initSeen = true
			status := ""
			for _, s := range ev.MCPServers {
				if s.Name == pluginServer {
					status = s.Status
				}
			}
			if status != "connected" && status != "pending" {
				t.Errorf("init: the plugin's server is %q, want connected or pending: %+v", status, ev.MCPServers)
			}
			t.Logf("init said the plugin's server was %q", status)
			if !containsStr(ev.Skills, "atm-agent-mcp:lead-codex-team") {
				t.Errorf("init: the skill is missing from %v", ev.Skills)
			}
			for _, c := range []string{"atm-agent-mcp:team-status", "atm-agent-mcp:doctor", "atm-agent-mcp:view"} {
				if !containsStr(ev.SlashCommands, c) {
					t.Errorf("init: the command %s is missing from %v", c, ev.SlashCommands)
				}
			}
		case ev.Type == "user":
			for _, r := range toolResults(ev.Message.Content) {
				results = append(results, r)
				if r.IsError {
					t.Errorf("Claude Code reports a tool error: %s", clipLog(r.Text, 2000))
				}
			}
		case ev.Type == "result":
			if ev.IsError || ev.Result != "all done" {
				t.Errorf("result: is_error %v result %q", ev.IsError, ev.Result)
			}
		}
	}
	if !initSeen || len(results) != 3 {
		dump()
		t.Fatalf("init seen %v, %d tool results, want 3", initSeen, len(results))
	}
	if agentID == "codex-none" || !strings.Contains(results[1].Text, `"identity":"arch"`) || !strings.Contains(results[1].Text, "MOCK") {
		t.Errorf("codex through the plugin: %s", clipLog(results[1].Text, 2000))
	}
	if !strings.Contains(results[2].Text, agentID) {
		t.Errorf("agent_sessions does not list %s: %s", agentID, clipLog(results[2].Text, 2000))
	}
	logText, _ := os.ReadFile(proxyLog)
	if !bytes.Contains(logText, []byte("identity=window2")) {
		t.Errorf("serve did not run as the window's identity window2")
	}
	if t.Failed() {
		dump()
		return
	}

	// The plugin's /atm-agent-mcp:doctor command runs doctor through the
	// launcher and hands its report to the model: every check of this
	// setup is ok, the identity held by this session's own serve included,
	// no failure of the server cached, and the launcher's plugin version
	// the binary's.
	prompts := &promptLog{}
	doctorAPI := &anthropicMock{t: t, script: []mockStep{func([]mockResult) []mockBlock { return []mockBlock{{Text: "checked"}} }}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		prompts.add(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		doctorAPI.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	if err := os.MkdirAll(filepath.Join(dir, "codex-home"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "codex-home", "auth.json"), []byte(`{"OPENAI_API_KEY":"sk-test"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(env, "ANTHROPIC_BASE_URL="+srv.URL, "CODEX_HOME="+filepath.Join(dir, "codex-home"))
	doctorLog := filepath.Join(dir, "claude-debug-doctor.log")
	dr := runClaudeP(t, claude, work, env, "/atm-agent-mcp:doctor", "--output-format", "stream-json", "--verbose", "--debug-file", doctorLog)
	report := prompts.text()
	for _, want := range []string{
		`(?m)^What serve needs, for team "dev" and identity "window2":$`,
		`(?m)^ok +team +dev: `,
		`(?m)^ok +identity +window2 is held by the serve of the Claude Code session that runs this check \(pid [0-9]+\)$`,
		`(?m)^ok +codex +` + regexp.QuoteMeta(mockcodexBin) + `, Codex ` + regexp.QuoteMeta(testedAppVersion) + `, driven as app-server`,
		`(?m)^ok +login +` + regexp.QuoteMeta(filepath.Join(dir, "codex-home", "auth.json")) + ` exists`,
		`(?m)^ok +claude-cache +Claude Code has cached no failure of the atm-agent-mcp plugin's server`,
		`(?m)^ok +plugin +started by the launcher of plugin ` + regexp.QuoteMeta(pluginVersion(t)) + `, the version this binary was built with`,
		`Explain the result to the user`,
	} {
		if !regexp.MustCompile(want).MatchString(report) {
			t.Errorf("the doctor command's prompt does not match %s", want)
		}
	}
	if dr.err != nil || t.Failed() {
		// When the shell ran against our server's start (the identity
		// check wants it claimed): "Spawning shell".
		logTail(t, "claude's debug log (our server, the command's shell)", doctorLog, 0, ourServer, "Spawning shell", "[engine]")
		t.Errorf("claude -p /atm-agent-mcp:doctor: %v\n%s\nprompts:\n%s", dr.err, clipLog(dr.stdout.String()+dr.stderr.String(), 6000), clipLog(report, 6000))
	}

	// The plugin's /atm-agent-mcp:view command starts the page in the
	// background through the launcher and hands its address to the model;
	// the address answers with its token and refuses without it.
	viewPrompts := &promptLog{}
	viewAPI := &anthropicMock{t: t, script: []mockStep{func([]mockResult) []mockBlock { return []mockBlock{{Text: "here it is"}} }}}
	viewSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		viewPrompts.add(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		viewAPI.serve(w, r)
	}))
	t.Cleanup(viewSrv.Close)
	env = append(env, "ANTHROPIC_BASE_URL="+viewSrv.URL)
	vr := runClaudeP(t, claude, work, env, "/atm-agent-mcp:view", "--output-format", "stream-json", "--verbose")
	m := regexp.MustCompile(`atm-agent-mcp view: team dev at (http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{48}) \(pid ([0-9]+); stop it with: kill [0-9]+\)`).FindStringSubmatch(viewPrompts.text())
	if m == nil {
		t.Fatalf("the view command's prompt has no address:\n%s\n%s", clipLog(viewPrompts.text(), 4000), clipLog(vr.stdout.String()+vr.stderr.String(), 4000))
	}
	pid, _ := strconv.Atoi(m[2])
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGTERM) })
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("atm-agent-mcp view")) {
		t.Errorf("GET the page: %s\n%s", resp.Status, clipLog(string(page), 2000))
	}
	noToken, _, _ := strings.Cut(m[1], "?")
	if resp, err := http.Get(noToken); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET the page without its token: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Errorf("stopping the view (pid %d): %v", pid, err)
	}
}

// promptLog keeps the text of the messages of every request to the
// Anthropic API mock.
type promptLog struct {
	mu    sync.Mutex
	texts []string
}

func (p *promptLog) add(body []byte) {
	var req mockRequest
	if json.Unmarshal(body, &req) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range req.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			p.texts = append(p.texts, s)
			continue
		}
		var blocks []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			p.texts = append(p.texts, b.Text)
		}
	}
}

func (p *promptLog) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.texts, "\n")
}

// TestClaudePluginLauncher checks the plugin's launcher on its own: it
// runs atm-agent-mcp from ATM_AGENT_MCP_BIN, from the plugin's data folder
// or from PATH, and without one it says on stderr how to install it and
// exits 127. A binary built with another plugin version (a stale build
// first on PATH) gives way to one of the plugin's version found later;
// when there is none it runs, after the launcher said on stderr what to
// do; the binary learns the plugin's version (ATM_AGENT_MCP_PLUGIN_VERSION).
func TestClaudePluginLauncher(t *testing.T) {
	t.Parallel()
	launcher, err := filepath.Abs(filepath.Join("..", pluginDir, "bin", "atm-agent-mcp-launch"))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir() // HOME without go/bin, a PATH without atm-agent-mcp
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proxy, filepath.Join(data, "bin", "atm-agent-mcp")); err != nil {
		t.Fatal(err)
	}
	sysPath := "/usr/bin:/bin"
	want := pluginVersion(t)
	// Stale builds: one from before plugin-version existed, one of an
	// older plugin, one of a newer plugin. Each says who it is and which
	// plugin version the launcher told it.
	stale := t.TempDir()
	fake := func(name, pluginVersion string) string {
		dir := filepath.Join(stale, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		answer := `echo "atm-agent-mcp: error: unexpected argument plugin-version" >&2; exit 2`
		if pluginVersion != "" {
			answer = "echo " + pluginVersion
		}
		script := "#!/bin/sh\nif [ \"$1\" = plugin-version ]; then " + answer + "; fi\necho \"" + name + " told plugin $ATM_AGENT_MCP_PLUGIN_VERSION\"\n"
		if err := os.WriteFile(filepath.Join(dir, "atm-agent-mcp"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	old, older, newer := fake("old", ""), fake("older", "0.0.1"), fake("newer", "99.0.0")
	goHome := t.TempDir() // HOME whose go/bin holds the binary of this plugin
	if err := os.MkdirAll(filepath.Join(goHome, "go", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proxy, filepath.Join(goHome, "go", "bin", "atm-agent-mcp")); err != nil {
		t.Fatal(err)
	}
	staleWarning := "but this plugin is " + want + `: tools the plugin's skill and commands use may be missing`
	for _, tc := range []struct {
		name     string
		env      []string
		wantCode int
		stdout   string
		stderr   []string
	}{
		{"on PATH", []string{"PATH=" + filepath.Dir(proxy) + ":" + sysPath}, 0, "atm-agent-mcp ", nil},
		{"in the plugin's data", []string{"PATH=" + sysPath, "CLAUDE_PLUGIN_DATA=" + data}, 0, "atm-agent-mcp ", nil},
		{"ATM_AGENT_MCP_BIN", []string{"PATH=" + sysPath, "ATM_AGENT_MCP_BIN=" + proxy}, 0, "atm-agent-mcp ", nil},
		{"ATM_AGENT_MCP_BIN wrong", []string{"PATH=" + filepath.Dir(proxy) + ":" + sysPath, "ATM_AGENT_MCP_BIN=" + filepath.Join(empty, "nope")}, 127, "",
			[]string{"ATM_AGENT_MCP_BIN=" + filepath.Join(empty, "nope") + " is not an executable file"}},
		{"a stale build on PATH gives way to the plugin's in ~/go/bin", []string{"PATH=" + old + ":" + sysPath, "HOME=" + goHome}, 0, "atm-agent-mcp ", nil},
		{"only a build from before plugin-version", []string{"PATH=" + old + ":" + sysPath}, 0, "old told plugin " + want, []string{
			filepath.Join(old, "atm-agent-mcp") + " was built with an older plugin (it has no plugin-version command), " + staleWarning,
			"git pull && make install", "Running it anyway.",
		}},
		{"only a build of an older plugin", []string{"PATH=" + older + ":" + sysPath}, 0, "older told plugin " + want, []string{
			filepath.Join(older, "atm-agent-mcp") + " was built with plugin 0.0.1, " + staleWarning,
		}},
		{"only a build of a newer plugin", []string{"PATH=" + newer + ":" + sysPath}, 0, "newer told plugin " + want, []string{
			"was built with plugin 99.0.0, " + staleWarning, "claude plugin update atm-agent-mcp@atm-agent-mcp",
		}},
		{"ATM_AGENT_MCP_BIN of another version runs, with the warning", []string{"PATH=" + filepath.Dir(proxy) + ":" + sysPath, "ATM_AGENT_MCP_BIN=" + filepath.Join(older, "atm-agent-mcp")},
			0, "older told plugin " + want, []string{"was built with plugin 0.0.1, " + staleWarning}},
		{"missing", []string{"PATH=" + sysPath}, 127, "", []string{
			"the atm-agent-mcp binary was not found",
			"go install github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/cmd/atm-agent-mcp@latest",
			"release archive",
			"ATM_AGENT_MCP_BIN",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(launcher, "--version")
			cmd.Env = append([]string{"HOME=" + empty}, tc.env...) // a later HOME wins
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.HasPrefix(stdout.String(), tc.stdout) {
				t.Errorf("exit %d, stdout %q; want exit %d, stdout starting %q (stderr %s)", code, stdout.String(), tc.wantCode, tc.stdout, stderr.String())
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if len(tc.stderr) == 0 && stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// pluginVersion is the version of the repository's plugin.
func pluginVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", pluginDir, ".claude-plugin", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Version == "" {
		t.Fatalf("plugin.json has no version (%v): %s", err, b)
	}
	return m.Version
}

// startFirstWindow starts `atm-agent-mcp serve` as another window would, waits
// until it answers a ping (its identity is claimed by then), and stops it
// when the test ends.
func startFirstWindow(t *testing.T, env []string, dir string) {
	t.Helper()
	cmd := exec.Command("atm-agent-mcp", "serve")
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
	})
	if _, err := stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("the first window's serve did not answer a ping (%v): %q\n%s", err, line, stderr.String())
	}
}
