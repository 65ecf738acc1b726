package codexchild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// guardArg makes the test binary run package guard's Main (TestMain), as
// serve runs it: Config.Guard = {test binary, guardArg}.
const guardArg = "codexchild-test-guard"

// TestNotFound: a Codex binary that cannot be run fails the start with
// ErrNotFound naming the binary and the PATH the child got, whether the
// exec fails here (unguarded) or in the guard (exit 127 before the
// handshake, the guard's stderr saying why); a child that exits with
// another code, or after its handshake, is no ErrNotFound.
func TestNotFound(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "codex-not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	guardCmd := []string{exe, guardArg}
	tests := []struct {
		name       string
		bin        string
		guard      []string
		env        []string
		wantFound  bool   // ErrNotFound expected
		wantDetail string // in the NotFoundError's detail
		wantExit   bool   // an *ExitError (the guard ran)
	}{
		{name: "unguarded name", bin: "no-such-codex-3f9", wantFound: true, wantDetail: "executable file not found"},
		{name: "unguarded path", bin: filepath.Join(dir, "missing", "codex"), wantFound: true, wantDetail: "no such file or directory"},
		{name: "unguarded not executable", bin: notExec, wantFound: true, wantDetail: "permission denied"},
		{name: "guarded name", bin: "no-such-codex-3f9", guard: guardCmd, wantFound: true, wantDetail: "executable file not found", wantExit: true},
		{name: "guarded path", bin: filepath.Join(dir, "missing", "codex"), guard: guardCmd, wantFound: true, wantDetail: "no such file or directory", wantExit: true},
		{name: "guarded not executable", bin: notExec, guard: guardCmd, wantFound: true, wantDetail: "permission denied", wantExit: true},
		{name: "exit 3 at start", bin: mockBin(t), guard: guardCmd, env: []string{"MOCKCODEX_START_FAIL=3"}, wantExit: true},
	}
	for _, kind := range []Kind{KindMCPServer, KindAppServer} {
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				env := append([]string{"PATH=" + dir + ":/usr/bin:/bin", "MOCKCODEX_VERSION=0.169.0"}, tt.env...)
				b := newTestBackend(t, Config{Bin: tt.bin, Kind: kind, Guard: tt.guard, Env: env, Dir: dir})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				err := b.(backend.Starter).Start(ctx)
				if err == nil {
					t.Fatal("the start succeeded")
				}
				if got := errors.Is(err, backend.ErrNotFound); got != tt.wantFound {
					t.Fatalf("errors.Is(%v, ErrNotFound) = %v, want %v", err, got, tt.wantFound)
				}
				var ee *backend.ExitError
				if got := errors.As(err, &ee); got != tt.wantExit {
					t.Errorf("an *ExitError: %v, want %v (%v)", got, tt.wantExit, err)
				}
				if !tt.wantFound {
					return
				}
				var nf *backend.NotFoundError
				if !errors.As(err, &nf) {
					t.Fatalf("no *NotFoundError in %v", err)
				}
				if nf.Bin != tt.bin || nf.Path != dir+":/usr/bin:/bin" || !strings.Contains(nf.Detail, tt.wantDetail) {
					t.Errorf("got %+v, want bin %q, PATH %q and a detail with %q", nf, tt.bin, dir+":/usr/bin:/bin", tt.wantDetail)
				}
				if !strings.Contains(err.Error(), tt.bin) {
					t.Errorf("the error does not name the binary: %v", err)
				}
				if ee != nil && ee.Status.Code != notFoundCode {
					t.Errorf("exit status %v, want code 127", ee.Status)
				}
			})
		}
	}
}
