package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

// run runs the command line in a fresh home and working directory.
func run(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	return runWith(t, Programs{}, env, args...)
}

// runWith runs the command line with progs as its MCP servers.
func runWith(t *testing.T, progs Programs, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	home := t.TempDir()
	t.Chdir(home)
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(""), &out, &errb, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "ATM_HOME" || k == "HOME" {
			return home
		}
		return ""
	}, progs)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"--help"}, ExitOK},
		{[]string{"--version"}, ExitOK},
		{[]string{"config"}, ExitOK},
		{nil, ExitUsage},
		{[]string{"nope"}, ExitUsage},
		{[]string{"config", "--backend", "exec"}, ExitUsage},
		{[]string{"sessions", "--prune=forever"}, ExitUsage},
		{[]string{"summary", "codex-x"}, ExitFailure},
	}
	for _, tt := range tests {
		if got, _, stderr := run(t, nil, tt.args...); got != tt.want {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tt.args, got, tt.want, stderr)
		}
	}
	if code, _, _ := run(t, map[string]string{"ATM_AGENT_MCP_BACKEND": "exec"}, "config"); code != ExitFailure {
		t.Errorf("bad environment value: exit %d, want 1", code)
	}
}

// TestServe checks the hook receives the resolved configuration, that
// stdout is the hook's alone and that logs go to stderr or the log file.
func TestServe(t *testing.T) {
	code, stdout, stderr := run(t, nil, "serve")
	if code != ExitFailure || stdout != "" || !strings.Contains(stderr, "no MCP server") {
		t.Errorf("nil hook: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	var got *config.Config
	serve := Programs{Serve: func(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
		got = cfg
		logger.Info("hello from the proxy")
		logger.Debug("debug detail")
		fmt.Fprintln(stdout, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		return nil
	}}
	code, stdout, stderr = runWith(t, serve, nil, "serve", "--identity", "arch", "--timeout", "2m", "--resume=codex-1", "--explore", "--log-level", "debug")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n" {
		t.Errorf("stdout %q: not the hook's output alone", stdout)
	}
	if !strings.Contains(stderr, "hello from the proxy") || !strings.Contains(stderr, "debug detail") {
		t.Errorf("logs not on stderr at debug: %q", stderr)
	}
	if got.Identity != "arch" || got.RequestTimeout != 2*time.Minute || got.Resume != (config.Resume{Enabled: true, Target: "codex-1"}) ||
		!got.Readonly || got.Sources["readonly"].Detail != "--explore" {
		t.Errorf("config: %+v", got)
	}

	// --resume without a value; logs to a file at warn.
	dir := t.TempDir()
	logFile := filepath.Join(dir, "proxy.log")
	code, _, stderr = runWith(t, serve, nil, "serve", "--resume", "--log-file", logFile, "--log-level", "warn")
	if code != ExitOK || got.Resume != (config.Resume{Enabled: true}) {
		t.Fatalf("exit %d, resume %+v: %s", code, got.Resume, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr %q with a log file", stderr)
	}
	if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "hello") {
		t.Errorf("info logged at warn level: %q", b)
	}

	failing := Programs{Serve: func(context.Context, *config.Config, io.Reader, io.Writer, *slog.Logger) error {
		return errors.New("child died")
	}}
	if code, stdout, stderr := runWith(t, failing, nil, "serve"); code != ExitFailure || stdout != "" || !strings.Contains(stderr, "atm-agent-mcp serve: child died") {
		t.Errorf("failing hook: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "24h": 24 * time.Hour, "30m": 30 * time.Minute, "0d": 0} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "soon", "-5m"} {
		if _, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) succeeded", in)
		}
	}
}

func TestFlatten(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if got := flatten(errors.Join(errors.Join(a, b), nil)); len(got) != 2 {
		t.Errorf("nested join: %v", got)
	}
	if got := flatten(fmt.Errorf("x: %w: %w", a, b)); len(got) != 1 {
		t.Errorf("multi-%%w wrap split: %v", got)
	}
}
