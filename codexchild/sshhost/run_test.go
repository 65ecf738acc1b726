package sshhost_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/google/go-cmp/cmp"
)

// TestRun: a command runs on the host, in its directory, with the host's
// environment; failures say which host, what failed and what was said,
// and wrap the sentinel of what happened.
func TestRun(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	repo := filepath.Join(srv.Home, "repo with space")
	if err := os.Mkdir(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSHHOST_LOCAL_ONLY", "this machine's")
	tests := []struct {
		name    string
		dir     string
		argv    []string
		want    string
		wantErr error
		errHas  []string
	}{
		{name: "home", argv: []string{"sh", "-c", `pwd; echo "$HOME" "${SSHHOST_LOCAL_ONLY:-unset}"`},
			want: srv.Home + "\n" + srv.Home + " unset\n"},
		{name: "dir and quoting", dir: repo, argv: []string{"printf", "%s|", "it's", "$HOME", "a b"},
			want: "it's|$HOME|a b|"},
		{name: "pwd", dir: repo, argv: []string{"pwd"}, want: repo + "\n"},
		{name: "no dir", dir: filepath.Join(srv.Home, "nowhere"), argv: []string{"pwd"},
			wantErr: sshhost.ErrNoDir, errHas: []string{`host "box": run pwd`, "no directory " + filepath.Join(srv.Home, "nowhere") + " on this host"}},
		{name: "no command", argv: []string{"no-such-program-here", "--version"},
			wantErr: sshhost.ErrNoCommand, errHas: []string{`host "box": run no-such-program-here --version`, "exited with code 127", "not found"}},
		{name: "fails", argv: []string{"sh", "-c", "echo partial; echo it went wrong >&2; exit 3"},
			want: "partial\n", errHas: []string{`host "box": run sh -c`, "exited with code 3", "it went wrong"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := h.Run(t.Context(), tt.dir, tt.argv)
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if len(tt.errHas) == 0 {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			var he *sshhost.Error
			if !errors.As(err, &he) || he.Host != "box" {
				t.Fatalf("Run error = %v, want an *sshhost.Error of host box", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Run error = %v, want it to wrap %v", err, tt.wantErr)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Run error = %q, want it to say %q", err, s)
				}
			}
		})
	}
}
