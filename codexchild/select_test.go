package codexchild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProbeKind: --version decides when it parses, `mcp-server --help`'s
// usage line otherwise (an exit code 0 alone is no proof: 0.169.0 prints
// its top-level help for it), and app-server when nothing works.
func TestProbeKind(t *testing.T) {
	mock := mockBin(t)
	for _, tc := range []struct {
		name        string
		cfg         Config
		kind        Kind
		version, by string
	}{
		{"mock_0.153.4", Config{Bin: mock}, KindMCPServer, "0.153.4", "--version"},
		{"mock_0.169.0", Config{Bin: mock, Env: []string{"MOCKCODEX_VERSION=0.169.0"}}, KindAppServer, "0.169.0", "--version"},
		{"mock_0.154.0", Config{Bin: mock, Env: []string{"MOCKCODEX_VERSION=0.154.0"}}, KindAppServer, "0.154.0", "--version"},
		{"help_has_mcp_server", Config{Bin: script(t, `case "$1" in --version) echo "codex-cli dev";; *) echo "Start Codex as an MCP server"; echo; echo "Usage: codex mcp-server [OPTIONS]";; esac`)},
			KindMCPServer, "dev", "mcp-server --help"},
		{"help_is_top_level", Config{Bin: script(t, `case "$1" in --version) exit 2;; *) echo "Codex CLI"; echo; echo "Usage: codex [OPTIONS] [PROMPT]"; echo "       codex [OPTIONS] <COMMAND> [ARGS]";; esac`)},
			KindAppServer, "", "mcp-server --help"},
		{"missing_binary", Config{Bin: "/nonexistent/codex"}, KindAppServer, "", "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, version, by := probeKind(ctxFor(t, 20*time.Second), tc.cfg)
			if kind != tc.kind || version != tc.version || !strings.HasPrefix(by, tc.by) {
				t.Errorf("probeKind = %s, %q, %q; want %s, %q, %s...", kind, version, by, tc.kind, tc.version, tc.by)
			}
		})
	}
}

// TestProbeRealCodex measures both probes on the real binaries: --version,
// and the mcp-server --help usage line (0.169.0 exits 0 for it too).
func TestProbeRealCodex(t *testing.T) {
	for _, tc := range []struct {
		which realcodex.Which
		kind  Kind
		usage bool
	}{{realcodex.MCPServer, KindMCPServer, true}, {realcodex.AppServer, KindAppServer, false}} {
		t.Run(tc.which.String(), func(t *testing.T) {
			cfg := Config{Bin: realcodex.Bin(t, tc.which)}
			kind, version, by := probeKind(ctxFor(t, 30*time.Second), cfg)
			if kind != tc.kind || by != "--version" || version == "" {
				t.Errorf("probeKind = %s, %q, %q; want %s by --version", kind, version, by, tc.kind)
			}
			help, err := probeRun(ctxFor(t, 30*time.Second), cfg, "mcp-server", "--help")
			if err != nil {
				t.Fatalf("mcp-server --help: %v (it exits 0 in both versions)", err)
			}
			if got := mcpServerUsage.Match(help); got != tc.usage {
				t.Errorf("mcp-server usage line found = %v, want %v in:\n%.300s", got, tc.usage, help)
			}
		})
	}
}

// TestNewAuto: New with Kind "" probes at first use (not before), picks
// app-server for the tested app-server Codex, and reports the version.
func TestNewAuto(t *testing.T) {
	t.Run("app-server", func(t *testing.T) {
		cfg, cwd := setupMockApp(t)
		cfg.Kind = ""
		b := newTestBackend(t, cfg)
		if _, ok := b.(*autoBackend); !ok {
			t.Fatalf("New = %T, want the auto backend", b)
		}
		if s := b.Status(); s.Started || s.Version != "" {
			t.Errorf("Status before use = %+v", s)
		}
		res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "auto", Params: backend.ThreadParams{Cwd: cwd}})
		if err != nil || res.Text != "MOCK_REPLY: auto" {
			t.Fatalf("Turn = %+v, %v", res, err)
		}
		if k := kindOf(b); k != KindAppServer {
			t.Errorf("Kind = %s, want app-server", k)
		}
		if s := b.Status(); !s.Running || s.Version != TestedAppServerCodex {
			t.Errorf("Status = %+v, want running %s", s, TestedAppServerCodex)
		}
	})
	t.Run("mcp-server", func(t *testing.T) {
		cfg, _ := setupMock(t)
		cfg.Kind = KindAuto
		b := newTestBackend(t, cfg)
		if k := kindOf(b); k != KindAuto {
			t.Errorf("Kind before first use = %s, want auto (Kind never probes)", k)
		}
		if _, err := toolsOf(t, b).Tools(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if k, s := kindOf(b), b.Status(); k != KindMCPServer || Kind(s.Protocol) != KindMCPServer {
			t.Errorf("Kind for mockcodex 0.153.4 = %s (Status %s), want mcp-server", k, s.Protocol)
		}
	})
	if _, err := New(Config{Bin: "codex", Kind: "websocket"}); err == nil {
		t.Error("New accepted an unknown kind")
	}
}

// TestNewAutoMissingBinary: the probe does not hide a missing binary: the
// first call fails with the start error, and Close before any use starts
// nothing.
func TestNewAutoMissingBinary(t *testing.T) {
	b := newTestBackend(t, Config{Bin: "/nonexistent/codex"})
	_, err := b.Turn(ctxFor(t, 20*time.Second), backend.TurnRequest{Prompt: "x"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/codex") {
		t.Fatalf("Turn = %v, want the start error", err)
	}
	t.Run("close_before_use", func(t *testing.T) {
		b := newTestBackend(t, Config{Bin: "/nonexistent/codex"})
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Turn(context.Background(), backend.TurnRequest{Prompt: "x"}); err != backend.ErrClosed {
			t.Errorf("Turn after Close = %v, want ErrClosed", err)
		}
	})
}
