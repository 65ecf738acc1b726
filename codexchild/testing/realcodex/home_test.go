package realcodex_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
	"github.com/google/go-cmp/cmp"
)

// fakeTB records Skipf/Fatalf instead of ending the goroutine.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Skipf(format string, args ...any)  { f.skipped = fmt.Sprintf(format, args...) }
func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

func TestBin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Bin skips every real Codex")
	}
	exe := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho codex-cli 9.9.9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct{ Path, Skipped, Fatal string }
	tests := []struct {
		name, value, require string
		which                realcodex.Which
		want                 result
	}{
		{"found", exe, "", realcodex.MCPServer, result{Path: exe}},
		{"unset skips", "", "", realcodex.MCPServer, result{Skipped: "SKIP real Codex (mcp-server): ATM_CODEX_MCP_BIN not set; run `make test` (it installs the pinned CLIs with `make real-codex`)"}},
		{"unset fails when required", "", "1", realcodex.AppServer, result{Fatal: "real Codex (app-server) required (ATM_REQUIRE_REAL_CODEX=1) but unavailable: ATM_CODEX_APP_BIN not set; run `make real-codex`"}},
		{"missing file skips", "/nonexistent/codex", "", realcodex.AppServer, result{Skipped: "SKIP real Codex (app-server): ATM_CODEX_APP_BIN=/nonexistent/codex: stat /nonexistent/codex: no such file or directory; run `make test` (it installs the pinned CLIs with `make real-codex`)"}},
		{"not executable", plain, "0", realcodex.MCPServer, result{Skipped: "SKIP real Codex (mcp-server): ATM_CODEX_MCP_BIN=" + plain + " is not an executable file; run `make test` (it installs the pinned CLIs with `make real-codex`)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.which.EnvVar(), tt.value)
			t.Setenv(realcodex.RequireEnv, tt.require)
			f := &fakeTB{TB: t}
			got := result{Path: realcodex.Bin(f, tt.which)}
			got.Skipped, got.Fatal = f.skipped, f.fatal
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Bin (-want +got):\n%s", diff)
			}
		})
	}
	v, err := realcodex.Version(t.Context(), exe)
	if err != nil || v != "9.9.9" {
		t.Errorf("Version = %q, %v; want 9.9.9", v, err)
	}
}

func TestNewHome(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-real-must-not-leak")
	t.Setenv("CODEX_SANDBOX", "seatbelt")
	t.Setenv("ATM_CODEX_RUST_LOG", "")
	var h *realcodex.Home
	t.Run("inner", func(t *testing.T) {
		h = realcodex.NewHome(t, "http://127.0.0.1:1234/v1", &realcodex.HomeOptions{
			GitInit: true, ExtraTOML: "[features]\nweb_search_request = false"})
		for _, p := range []string{h.Dir, h.WorkDir} {
			if strings.HasPrefix(p, "/tmp/") || strings.HasPrefix(p, os.TempDir()) {
				t.Errorf("%s is under the temp dir", p)
			}
		}
		for _, d := range []string{h.WorkDir, h.UserHome} {
			if rel, err := filepath.Rel(h.Dir, d); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s is not inside %s", d, h.Dir)
			}
		}
		if ents, err := os.ReadDir(h.UserHome); err != nil || len(ents) != 0 {
			t.Errorf("user home %s: %d entries, %v; want an empty directory", h.UserHome, len(ents), err)
		}
		if _, err := os.Stat(filepath.Join(h.WorkDir, ".git")); err != nil {
			t.Errorf("GitInit: %v", err)
		}
		got, err := os.ReadFile(h.ConfigPath())
		if err != nil {
			t.Fatal(err)
		}
		want := `# Written by realcodex.NewHome for a test: the mock Responses API on loopback.
model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
model_providers.mock.name = "Mock Responses"
model_providers.mock.base_url = "http://127.0.0.1:1234/v1"
model_providers.mock.wire_api = "responses"
model_providers.mock.env_key = "MOCK_API_KEY"
model_providers.mock.request_max_retries = 0
model_providers.mock.stream_max_retries = 0
model_providers.mock.stream_idle_timeout_ms = 60000

[features]
web_search_request = false
`
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("config.toml (-want +got):\n%s", diff)
		}

		env := map[string]string{}
		for _, kv := range h.Env() {
			k, v, _ := strings.Cut(kv, "=")
			if _, dup := env[k]; dup {
				t.Errorf("Env repeats %s", k)
			}
			env[k] = v
		}
		wantEnv := map[string]string{"CODEX_HOME": h.Dir, "HOME": h.UserHome, "MOCK_API_KEY": "sk-mock", "RUST_LOG": "warn",
			realcodex.TagEnv: h.Dir, "OPENAI_API_KEY": "", "CODEX_SANDBOX": ""}
		gotEnv := map[string]string{}
		for k := range wantEnv {
			gotEnv[k] = env[k]
		}
		if diff := cmp.Diff(wantEnv, gotEnv); diff != "" {
			t.Errorf("Env (-want +got):\n%s", diff)
		}

		if r, err := h.Rollouts(); err != nil || r != nil {
			t.Errorf("Rollouts of a fresh home = %v, %v", r, err)
		}
		day := filepath.Join(h.SessionsDir(), "2026", "11", "21")
		id := "01a1ffa5-2928-7293-be2b-7f799c0e8da9"
		if err := os.MkdirAll(day, 0o700); err != nil {
			t.Fatal(err)
		}
		want1 := filepath.Join(day, "rollout-2026-11-21T19-44-12-"+id+".jsonl")
		for _, p := range []string{want1, filepath.Join(day, "notes.txt")} {
			if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := h.RolloutFor(id); err != nil || got != want1 {
			t.Errorf("RolloutFor = %q, %v; want %q", got, err, want1)
		}
		if _, err := h.RolloutFor("01a1ffa5-0000-0000-0000-000000000000"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("RolloutFor unknown thread: %v", err)
		}
		if err := h.ResetRules(); err != nil {
			t.Errorf("ResetRules without a rules file: %v", err)
		}
	})
	if h == nil {
		return // NewHome failed the inner test, which says why
	}
	if _, err := os.Stat(h.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CODEX_HOME %s left behind after the test: %v", h.Dir, err)
	}
}

// TestHomesDirFor: homes go to the repository's .cache, else the user's,
// and never under the temp dir, where Codex refuses to create its helper
// binaries; a clone under /tmp with a HOME under /tmp (a newcomer's scratch
// setup) gets /var/tmp/atm-agent-mcp-test-<uid>.
func TestHomesDirFor(t *testing.T) {
	tmpClone := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmpClone, "go.work"), []byte("go 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(tmpClone, "codexchild", "realcodex")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	varTmp := filepath.Join("/var/tmp", fmt.Sprintf("atm-agent-mcp-test-%d", os.Getuid()))
	userHome, err := os.UserHomeDir()
	if err != nil || strings.HasPrefix(userHome, "/tmp/") || strings.HasPrefix(userHome, os.TempDir()) {
		userHome = ""
	}
	tests := []struct {
		name, wd, home, want string
	}{
		{"clone and home under /tmp", wd, t.TempDir(), varTmp},
		{"clone under /tmp, no home", wd, "", varTmp},
	}
	if userHome != "" {
		tests = append(tests, struct{ name, wd, home, want string }{
			"clone under /tmp, a real home", wd, userHome, filepath.Join(userHome, ".cache", "atm-agent-mcp-test")})
	}
	if here, err := os.Getwd(); err == nil && !strings.HasPrefix(here, "/tmp/") && !strings.HasPrefix(here, os.TempDir()) {
		repo := filepath.Dir(filepath.Dir(filepath.Dir(here))) // codexchild/testing/realcodex
		tests = append(tests, struct{ name, wd, home, want string }{
			"this clone", here, t.TempDir(), filepath.Join(repo, ".cache", "realcodex")})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.HasPrefix(varTmp, os.TempDir()) {
				t.Skipf("SKIP: the temp dir %s holds /var/tmp", os.TempDir())
			}
			got, err := realcodex.HomesDirFor(tt.wd, tt.home)
			if err != nil || got != tt.want {
				t.Errorf("HomesDirFor(%q, %q) = %q, %v; want %q", tt.wd, tt.home, got, err, tt.want)
			}
		})
	}
}

func TestServeEchoTool(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo_identity","arguments":{"text":"hi"},"_meta":{"threadId":"T1"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`,
		`not json`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	}, "\r\n") // no final newline: the last line still counts
	var out, log bytes.Buffer
	if err := realcodex.ServeEchoTool(strings.NewReader(in), &out, "alice", &log); err != nil {
		t.Fatal(err)
	}
	want := `{"id":0,"jsonrpc":"2.0","result":{"capabilities":{"tools":{}},"protocolVersion":"2025-06-18","serverInfo":{"name":"realcodex-echo","version":"0.0.1"}}}
{"id":1,"jsonrpc":"2.0","result":{"tools":[{"description":"Echo the text with the identity this server was started with.","inputSchema":{"properties":{"text":{"type":"string"}},"type":"object"},"name":"echo_identity"}]}}
{"id":"c","jsonrpc":"2.0","result":{"content":[{"text":"identity=alice thread=T1 text=hi","type":"text"}],"isError":false}}
{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"unknown tool other","type":"text"}],"isError":true}}
{"error":{"code":-32601,"message":"method not found: resources/list"},"id":4,"jsonrpc":"2.0"}
{"id":5,"jsonrpc":"2.0","result":{}}
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	wantLog := `{"identity":"alice","name":"echo_identity","arguments":{"text":"hi"},"_meta":{"threadId":"T1"}}
{"identity":"alice","name":"other","arguments":{},"_meta":null}
`
	if diff := cmp.Diff(wantLog, log.String()); diff != "" {
		t.Errorf("call log (-want +got):\n%s", diff)
	}
}
