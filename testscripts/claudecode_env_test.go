//go:build unix

package testscripts

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// claudeKey is the API key the offline runs give Claude Code; the mock
// accepts any.
const claudeKey = "sk-ant-offline-test-key-0123456789abcdef"

// writeServeMCPConfig writes Claude Code's --mcp-config for serve (the
// server "codex") with the ATM home atmHome, run's Codex and its
// environment, and extra arguments; it returns the file's path.
func writeServeMCPConfig(t *testing.T, dir, atmHome string, run claudeRun, serveLog string, extra ...string) string {
	t.Helper()
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "MOCKCODEX_LOG": filepath.Join(dir, "child.jsonl"),
		"PATH": os.Getenv("PATH"), "GIT_CEILING_DIRECTORIES": dir}
	for k, v := range run.env {
		env[k] = v
	}
	args := append([]string{"serve", "--codex-bin", run.codexBin, "--backend", run.backend,
		"--log-level", "debug", "--log-file", serveLog}, extra...)
	return writeMCPFile(t, dir, proxy, args, env)
}

// writeMCPFile writes dir/mcp.json, Claude Code's --mcp-config with one
// stdio server "codex" (command, its args and env), and returns its path.
func writeMCPFile(t *testing.T, dir, command string, args []string, env map[string]string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"codex": map[string]any{"command": command, "args": args, "env": env}}})
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// claudeEnv is the environment of an offline Claude Code: its own HOME,
// the mock API, nothing sent elsewhere, and for the race-built programs it
// starts no sleep on exit (raceExitEnv).
func claudeEnv(home, apiURL string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + apiURL, "ANTHROPIC_API_KEY=" + claudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "TMPDIR=" + os.TempDir(),
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1", // the interactive CLI would git clone it from GitHub
		raceExitEnv()}
	return append(env, extra...)
}

// pluginHome makes a test's folder with a user's HOME and a working
// folder in it, and installs our plugin in that HOME with the real
// Claude Code as a user does (the repository as a directory
// marketplace). It returns the folder, the HOME and the working folder.
func pluginHome(t *testing.T, claude string) (dir, home, work string) {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	home, work = filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"plugin", "marketplace", "add", repo},
		{"plugin", "install", "atm-agent-mcp@atm-agent-mcp"},
	} {
		cmd := exec.Command(claude, args...)
		cmd.Dir, cmd.Env = work, claudeEnv(home, "http://127.0.0.1:9")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir, home, work
}

// streamResult returns the result of Claude Code's stream-json output.
func streamResult(t *testing.T, out []byte) string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	result := ""
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Subtype string `json:"subtype"`
			IsError bool   `json:"is_error"`
			Result  string `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "result" {
			if ev.IsError || ev.Subtype != "success" {
				t.Errorf("result: subtype %q is_error %v result %q", ev.Subtype, ev.IsError, ev.Result)
			}
			result = ev.Result
		}
	}
	return result
}

// around returns the part of s within n bytes of the first sub.
func around(s, sub string, n int) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return ""
	}
	return s[max(0, i-n):min(len(s), i+len(sub)+n)]
}

// randomHex returns n random bytes in hex.
func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// logTail writes the end of a log file to the test log (n bytes, 0 for
// all); with filters, only the lines that contain one of them.
func logTail(t *testing.T, name, file string, n int, filters ...string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Logf("%s: %v", name, err)
		return
	}
	text := string(b)
	if len(filters) > 0 {
		var keep []string
		for _, line := range strings.Split(text, "\n") {
			for _, f := range filters {
				if strings.Contains(line, f) {
					keep = append(keep, line)
					break
				}
			}
		}
		text = strings.Join(keep, "\n")
	}
	if n > 0 {
		text = clipLog(text, n)
	}
	t.Logf("%s:\n%s", name, text)
}

// grepLines returns the lines of file that contain s.
func grepLines(file, s string) []string {
	b, _ := os.ReadFile(file)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// logLevels counts the lines of serve's own log (slog text or JSON) at
// WARN and at ERROR: not the lines of a child's stderr that it relays at
// the child's own level ("codex child stderr").
func logLevels(file string) (warn, errs int, lines []string) {
	b, _ := os.ReadFile(file)
	re := regexp.MustCompile(`level=(WARN|ERROR)|"level":"(WARN|ERROR)"`)
	relayed := regexp.MustCompile(`msg="[^"]* stderr"|"msg":"[^"]* stderr"`)
	for _, line := range strings.Split(string(b), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil || relayed.MatchString(line) {
			continue
		}
		lines = append(lines, line)
		if m[1] == "WARN" || m[2] == "WARN" {
			warn++
		} else {
			errs++
		}
	}
	return warn, errs, lines
}

// claudeP is one finished `claude -p` run: what it printed and how it
// ended.
type claudeP struct {
	stdout, stderr bytes.Buffer
	err            error
}

// runClaudeP runs the real Claude Code as `claude -p prompt args…` in dir
// with env (claudeEnv's, usually), in a process group of its own that is
// killed at claudeTimeout, and returns once it has ended.
func runClaudeP(t *testing.T, claude, dir string, env []string, prompt string, args ...string) *claudeP {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), claudeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, append([]string{"-p", prompt}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	r := &claudeP{}
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	start := time.Now()
	r.err = cmd.Run()
	t.Logf("claude -p %q: %.1fs", prompt, time.Since(start).Seconds())
	return r
}

// dump logs the run's output, clipped, and the tail of each log file.
func (r *claudeP) dump(t *testing.T, logs ...string) {
	t.Helper()
	t.Logf("claude stdout:\n%s", clipLog(r.stdout.String(), 8000))
	t.Logf("claude stderr:\n%s", clipLog(r.stderr.String(), 4000))
	for _, f := range logs {
		if b, err := os.ReadFile(f); err == nil {
			t.Logf("%s:\n%s", filepath.Base(f), clipLog(string(b), 12000))
		}
	}
}
