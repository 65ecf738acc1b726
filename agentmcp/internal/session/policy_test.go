package session

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestHoldPolicy: when every configured sandbox is read-only (--readonly),
// threadParams sends a read-only sandbox, no profile and only the allowed
// config keys, whatever the settings say — and logs what it removed; with a
// wider role configured, settings pass as they are (Create checked them).
func TestHoldPolicy(t *testing.T) {
	wide := ThreadSettings{Sandbox: "danger-full-access", Profile: "p", ApprovalPolicy: "never",
		Config: map[string]any{"sandbox_mode": "danger-full-access", "sandbox_workspace_write.network_access": true, "model_verbosity": "low"}}
	tests := []struct {
		name    string
		cfg     Config
		st      ThreadSettings
		sandbox string
		profile string
		config  map[string]any
		logged  string
	}{
		{"readonly clamps", Config{Defaults: ThreadDefaults{Sandbox: "read-only"}, Roles: map[string]ThreadDefaults{"r": {Model: "m"}}}, wide,
			"read-only", "", map[string]any{"model_verbosity": "low"}, "removed=\"sandbox=danger-full-access, profile=p, config.sandbox_mode, config.sandbox_workspace_write.network_access\""},
		{"readonly fills an empty sandbox", Config{Defaults: ThreadDefaults{Sandbox: "read-only"}}, ThreadSettings{},
			"read-only", "", nil, ""},
		{"a wider role: as they are", Config{Defaults: ThreadDefaults{Sandbox: "read-only"}, Roles: map[string]ThreadDefaults{"b": {Sandbox: "workspace-write"}}}, wide,
			"danger-full-access", "p", wide.Config, ""},
		{"not read-only: as they are", Config{Defaults: ThreadDefaults{Sandbox: "workspace-write"}}, wide,
			"danger-full-access", "p", wide.Config, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			tt.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
			p := codexOptions(threadParams(&tt.cfg, sessionContext{Identity: "arch", Team: "dev"}, tt.st, registry.DefaultKind, fakebackend.New(fakebackend.Config{})))
			if p.Sandbox != tt.sandbox || p.Profile != tt.profile || p.ApprovalPolicy != tt.st.ApprovalPolicy {
				t.Errorf("sandbox %q profile %q approval %q, want %q %q %q", p.Sandbox, p.Profile, p.ApprovalPolicy, tt.sandbox, tt.profile, tt.st.ApprovalPolicy)
			}
			if diff := cmp.Diff(tt.config, p.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if tt.logged != "" && !strings.Contains(log.String(), tt.logged) || tt.logged == "" && log.Len() > 0 {
				t.Errorf("log %q, want %q", log.String(), tt.logged)
			}
		})
	}
}

// TestReadOnlyApprovals: approval_fallback = "approve" approves nothing of
// a session held read-only (a patch would write); a session of a role the
// operator made wider still gets it.
func TestReadOnlyApprovals(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"held read-only", func(c *Config) {
			c.ApprovalFallback, c.Defaults = "approve", ThreadDefaults{Sandbox: "read-only"}
		}, "decision: deny denied automatically: the operator holds this session read-only"},
		{"not held", func(c *Config) {
			c.ApprovalFallback, c.Defaults = "approve", ThreadDefaults{Sandbox: "workspace-write"}
		}, "decision: approve "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.modify)
			s := h.create("arch")
			got := <-runAsync(s, Turn{Prompt: "APPROVE", Source: SourceClaude})
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("turn result = %q, want it to start with %q", got, tt.want)
			}
		})
	}
}
