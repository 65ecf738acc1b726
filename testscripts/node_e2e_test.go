//go:build unix

package testscripts

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// e2eScriptTimeout bounds one Node script (the proxy and Codex included).
const e2eScriptTimeout = 90 * time.Second

// TestNodeClient runs the real-client end-to-end tests of e2e/: the official
// MCP TypeScript SDK v1 (client.mjs) and v2 in its three negotiation modes,
// 2025-11-25 and 2026-07-28 with multi round-trip approvals (client_v2.mjs),
// and a raw Content-Length client (content_length.mjs) drive the
// atm-agent-mcp binary, which drives the real
// Codex CLI against the loopback model, with real team-mail files; per
// backend: mcp-server (Codex 0.153.4) and app-server (the pinned Codex). The
// npm packages are installed once with npm ci into e2e/node_modules
// (git-ignored). Without node, npm or the Codex binaries it skips loudly;
// under ATM_REQUIRE_REAL_CODEX=1 it fails instead.
func TestNodeClient(t *testing.T) {
	node := nodeTool(t, "node")
	npm := nodeTool(t, "npm")
	e2e, err := filepath.Abs("e2e")
	if err != nil {
		t.Fatal(err)
	}
	installNodeModules(t, npm, e2e)
	bin := buildProxyBinary(t)

	for _, tc := range []struct {
		which   realcodex.Which
		backend string
	}{
		{realcodex.MCPServer, "mcp-server"},
		{realcodex.AppServer, "app-server"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			codex := realcodex.Bin(t, tc.which)
			start := time.Now()
			defer func() { t.Logf("%s: %.1fs", tc.backend, time.Since(start).Seconds()) }()

			dir := t.TempDir()
			logDir := filepath.Join(dir, "logs")
			if err := os.MkdirAll(logDir, 0o755); err != nil {
				t.Fatal(err)
			}
			modelLog := filepath.Join(dir, "model.jsonl")
			lf, err := os.OpenFile(modelLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			mock, err := mockmodel.Start(mockmodel.Config{Log: lf})
			if err != nil {
				t.Fatal(err)
			}
			// Cleanups run last-in first-out: the mock closes after the
			// home's leak check (registered by NewHome below).
			t.Cleanup(func() { mock.Close(); lf.Close() })
			home := realcodex.NewHome(t, mock.URL(), nil)

			atmHome := filepath.Join(dir, "atm")
			makeTeam(t, atmHome, "arch", "dev-1", "qa")

			env := e2eEnv(home.Env(), map[string]string{
				"ATM_HOME":           atmHome,
				"HOME":               atmHome,
				"ATM_E2E_BIN":        bin,
				"ATM_E2E_CODEX_BIN":  codex,
				"ATM_E2E_BACKEND":    tc.backend,
				"ATM_E2E_TEAM":       "dev",
				"ATM_E2E_WORK":       home.WorkDir,
				"ATM_E2E_MODEL_LOG":  modelLog,
				"ATM_E2E_LOG_DIR":    logDir,
				"ATM_E2E_TIMEOUT_MS": strconv.Itoa(int((e2eScriptTimeout - 10*time.Second).Milliseconds())),
			})
			for _, script := range []string{"client.mjs", "client_v2.mjs", "content_length.mjs"} {
				out, err := runNodeScript(t, node, e2e, script, env)
				if err != nil {
					dumpLogs(t, logDir)
					t.Fatalf("node %s: %v", script, err)
				}
				if !strings.Contains(out, "PASS "+script) {
					t.Fatalf("node %s exited 0 without its PASS line", script)
				}
			}
			// Cross-check from the Go side that the conversation reached the model.
			wants := []string{"MOCK_REPLY", "<team-mail", "Session ending. Write a concise summary", "hello over content-length"}
			if tc.backend == "mcp-server" {
				// A resume on mcp-server is a new thread told the summary;
				// app-server's continues the thread itself.
				wants = append(wants, "[Previous session — ")
			}
			for _, want := range wants {
				if !mock.SawInput(want) {
					t.Errorf("the model never saw %q", want)
				}
			}
		})
	}
}

// nodeTool returns the path of node or npm: a missing tool (or a node older
// than 18, the SDK's minimum) skips loudly, or fails under
// ATM_REQUIRE_REAL_CODEX=1.
func nodeTool(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIP real-client e2e test: -short (make check) runs no npm and no real client")
	}
	path, err := exec.LookPath(name)
	problem := ""
	if err != nil {
		problem = err.Error()
	} else if name == "node" {
		out, err := exec.Command(path, "--version").Output()
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major, _, _ := strings.Cut(v, ".")
		if n, cerr := strconv.Atoi(major); err != nil || cerr != nil || n < 18 {
			problem = fmt.Sprintf("node --version = %q (err %v); need Node >= 18", strings.TrimSpace(string(out)), err)
		}
	}
	if problem == "" {
		return path
	}
	if os.Getenv(realcodex.RequireEnv) == "1" {
		t.Fatalf("the real-client e2e test needs %s (%s=1): %s", name, realcodex.RequireEnv, problem)
	}
	t.Skipf("SKIP real-client e2e test: %s: %s", name, problem)
	return ""
}

// installNodeModules runs npm ci in dir once: a stamp in node_modules holds
// the hash of package-lock.json it was installed from, and a lock file
// serialises concurrent test processes.
func installNodeModules(t *testing.T, npm, dir string) {
	t.Helper()
	lockJSON, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lockJSON)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", ".atm-e2e-installed")

	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "atm-agent-mcp-e2e-npm.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := fmt.Sprintf("npm ci in %s: %v\n%s", dir, err, out)
		if os.Getenv(realcodex.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skipf("SKIP real-client e2e test: %s", msg)
	}
	t.Logf("npm ci in %s: %.1fs", dir, time.Since(start).Seconds())
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildProxyBinary builds bin/atm-agent-mcp from ../agentmcp into a temp
// dir, so the test does not depend on make build. $ATM_E2E_PROXY_BIN names
// a prebuilt binary to test instead.
func buildProxyBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ATM_E2E_PROXY_BIN"); p != "" {
		t.Logf("testing the proxy binary %s ($ATM_E2E_PROXY_BIN)", p)
		return p
	}
	out := filepath.Join(t.TempDir(), "atm-agent-mcp")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/atm-agent-mcp")
	cmd.Dir = filepath.Join("..", "agentmcp")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build atm-agent-mcp: %v\n%s", err, b)
	}
	return out
}

// e2eEnv is base without ATM_* settings that could leak in from the
// developer's shell, plus set.
func e2eEnv(base []string, set map[string]string) []string {
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || strings.HasPrefix(k, "ATM_") && k != realcodex.TagEnv {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// runNodeScript runs `node script` in dir with env in its own process group,
// streams its output into the test log, and returns the output and the
// error of a non-zero exit or a timeout. On failure the whole process group
// (the proxy and Codex included) is killed.
func runNodeScript(t *testing.T, node, dir, script string, env []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On timeout: SIGTERM to the group (node, the proxy), then the hard
	// stop; whatever is left is killed below and by the leak check.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	lw := &lineLogger{t: t, prefix: script + ": "}
	cmd.Stdout = lw
	cmd.Stderr = lw
	start := time.Now()
	err := cmd.Run()
	lw.flush()
	t.Logf("node %s: %.1fs", script, time.Since(start).Seconds())
	if err != nil {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timeout %s)", err, e2eScriptTimeout)
		}
	}
	return lw.all.String(), err
}

// lineLogger writes each complete line to the test log as it comes.
type lineLogger struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	buf    []byte
	all    bytes.Buffer
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.t.Log(l.prefix + string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(l.prefix + string(l.buf))
		l.buf = nil
	}
}

// dumpLogs writes the tail of every proxy log of a failed run to the test log.
func dumpLogs(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		fh.Close()
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		t.Logf("--- last %d lines of %s:\n%s", len(lines), f, strings.Join(lines, "\n"))
	}
}
