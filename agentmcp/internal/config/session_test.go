package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSessionTeamName(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"c637aa76-882b-4f0e-9d3a-0123456789ab", "session-c637aa76"},
		{"short", "session-short"},
		{"ab.c/def-ghij", "session-ab-c-def"},
		{"  74b75939-0000  ", "session-74b75939"},
	} {
		if got := SessionTeamName(tc.id); got != tc.want {
			t.Errorf("SessionTeamName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestSessionTeam: under Claude Code, with the session's team directory
// present and no team configured, serve joins that team as team-lead; an
// explicit team or identity still wins, and the registry key is the fixed
// claude-code one only for the session team.
func TestSessionTeam(t *testing.T) {
	const id = "c637aa76-882b-4f0e-9d3a-0123456789ab"
	type result struct {
		Team, Identity, DefaultIdentity string
		SessionTeam                     bool
		TeamSource, IdentitySource      SourceKind
		RegTeam, RegInstance            string
	}
	for _, tc := range []struct {
		name  string
		noDir bool
		env   map[string]string
		flags Flags
		file  string
		want  result
	}{
		{name: "session team", env: map[string]string{EnvClaudeSessionID: id},
			want: result{"session-c637aa76", "team-lead", "codex", true, SourceSession, SourceSession, "claude-code", "session-c637aa76"}},
		{name: "no team directory: the client is still team-lead", noDir: true, env: map[string]string{EnvClaudeSessionID: id},
			want: result{"default", "team-lead", "codex", false, SourceDefault, SourceSession, "default", "team-lead"}},
		{name: "not under claude code",
			want: result{"default", "codex", "codex", false, SourceDefault, SourceDefault, "default", "codex"}},
		{name: "flag team wins", env: map[string]string{EnvClaudeSessionID: id}, flags: Flags{Team: ptr("mine")},
			want: result{"mine", "team-lead", "codex", false, SourceFlag, SourceSession, "mine", "team-lead"}},
		{name: "ATM_TEAM wins", env: map[string]string{EnvClaudeSessionID: id, "ATM_TEAM": "envteam"},
			want: result{"envteam", "team-lead", "codex", false, SourceEnv, SourceSession, "envteam", "team-lead"}},
		{name: "file team wins", env: map[string]string{EnvClaudeSessionID: id}, file: "[core]\ndefault_team = \"ft\"\n",
			want: result{"ft", "team-lead", "codex", false, SourceFile, SourceSession, "ft", "team-lead"}},
		{name: "a window's own identity in a named team", env: map[string]string{EnvClaudeSessionID: id}, flags: Flags{Team: ptr("dev"), Identity: ptr("arch")},
			want: result{"dev", "arch", "codex", false, SourceFlag, SourceFlag, "dev", "arch"}},
		{name: "the README's second window: lead-2 is the lead's alone", env: map[string]string{EnvClaudeSessionID: id, "ATM_TEAM": "my-team", "ATM_AGENT_MCP_IDENTITY": "lead-2"},
			want: result{"my-team", "lead-2", "codex", false, SourceEnv, SourceEnv, "my-team", "lead-2"}},
		{name: "outside claude code too, an identity is not the agents' default", env: map[string]string{"ATM_AGENT_MCP_IDENTITY": "lead-2"},
			want: result{"default", "lead-2", "codex", false, SourceDefault, SourceEnv, "default", "lead-2"}},
		{name: "identity flag kept", env: map[string]string{EnvClaudeSessionID: id}, flags: Flags{Identity: ptr("boss")},
			want: result{"session-c637aa76", "boss", "codex", true, SourceSession, SourceFlag, "claude-code", "session-c637aa76"}},
		{name: "default identity kept", env: map[string]string{EnvClaudeSessionID: id, "ATM_AGENT_MCP_DEFAULT_IDENTITY": "dev"},
			want: result{"session-c637aa76", "team-lead", "dev", true, SourceSession, SourceSession, "claude-code", "session-c637aa76"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if !tc.noDir {
				if err := os.MkdirAll(filepath.Join(f.home, ".claude", "teams", "session-c637aa76"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range tc.env {
				f.env[k] = v
			}
			if tc.file != "" {
				write(t, f.repoFile(), tc.file)
			}
			c := f.load(t, tc.flags)
			rt, ri := c.RegistryTeam()
			got := result{c.Team, c.Identity, c.DefaultIdentity, c.SessionTeam, c.Sources["team"].Kind, c.Sources["identity"].Kind, rt, ri}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLeadPush: lead_push is on by default, and a flag, the environment or
// a file turns it off; the messaging socket comes from Claude Code's
// variables.
func TestLeadPush(t *testing.T) {
	f := newFixture(t)
	c := f.load(t, Flags{})
	if !c.LeadPush || c.MessagingSocket != "" {
		t.Errorf("default: lead_push %v, socket %q; want true and none", c.LeadPush, c.MessagingSocket)
	}
	write(t, f.global(), "[plugins.atm-agent-mcp]\nlead_push = false\n")
	if c := f.load(t, Flags{}); c.LeadPush || c.Sources["lead_push"].Kind != SourceFile {
		t.Errorf("file: lead_push %v from %v, want false from the file", c.LeadPush, c.Sources["lead_push"])
	}
	f.env["ATM_AGENT_MCP_LEAD_PUSH"] = "yes"
	f.env[EnvMessagingSocket] = "/tmp/x.sock"
	f.env[EnvMessagingToken] = "t0k"
	c = f.load(t, Flags{})
	if !c.LeadPush || c.MessagingSocket != "/tmp/x.sock" || c.MessagingToken != "t0k" {
		t.Errorf("env: lead_push %v, socket %q, token %q", c.LeadPush, c.MessagingSocket, c.MessagingToken)
	}
	if c := f.load(t, Flags{LeadPush: ptr(false)}); c.LeadPush || c.Sources["lead_push"].Detail != "--lead-push" {
		t.Errorf("flag: lead_push %v from %v, want false from --lead-push", c.LeadPush, c.Sources["lead_push"])
	}
}

// TestClaudeCode: serve's client is Claude Code when any of the variables
// Claude Code gives its MCP servers is set.
func TestClaudeCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"a terminal", nil, false},
		{"CLAUDECODE", map[string]string{EnvClaudeCode: "1"}, true},
		{"CLAUDECODE other than 1", map[string]string{EnvClaudeCode: "0"}, false},
		{"the session id", map[string]string{EnvClaudeSessionID: "c637aa76-882b"}, true},
		{"the messaging socket", map[string]string{EnvMessagingSocket: "/tmp/cc.sock"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for k, v := range tc.env {
				f.env[k] = v
			}
			if got := f.load(t, Flags{}).ClaudeCode; got != tc.want {
				t.Errorf("ClaudeCode = %v, want %v", got, tc.want)
			}
		})
	}
}
