package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMisspeltSections(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want []Warning // File is filled in
	}{
		{"singular plugin", "[plugin.atm-agent-mcp]\nidentity = \"x\"\n",
			[]Warning{{Key: "plugin", Message: "unknown section, ignored (did you mean [plugins.atm-agent-mcp]?)"}}},
		{"underscores", "[plugins.atm_agent_mcp]\nidentity = \"x\"\n",
			[]Warning{{Key: "plugins.atm_agent_mcp", Message: "unknown plugin section, ignored (did you mean [plugins.atm-agent-mcp]?)"}}},
		{"shortened", "[plugins.atm-agent]\nmodel = \"o3\"\n",
			[]Warning{{Key: "plugins.atm-agent", Message: "unknown plugin section, ignored (did you mean [plugins.atm-agent-mcp]?)"}}},
		{"core typo", "[core]\ndefault_tean = \"t\"\nidentity = \"me\"\n",
			[]Warning{{Key: "core.default_tean", Message: "unknown key, ignored (did you mean default_team?)"}}},
		{"section typo", "[cores]\ndefault_team = \"t\"\n",
			[]Warning{{Key: "cores", Message: "unknown section, ignored (did you mean core?)"}}},
		{"ATM's own and other plugins are left alone",
			"[core]\ncolour = \"blue\"\n[roles]\nx = 1\n[aliases]\ny = \"z\"\n[plugins.other]\nz = true\n[plugins.atm-agent-mcp]\nmodel = \"o3\"\n[something]\na = 1\n",
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.repoFile(), tc.file)
			c := f.load(t, Flags{})
			var want []Warning
			for _, w := range tc.want {
				w.File = f.repoFile()
				want = append(want, w)
			}
			if diff := cmp.Diff(want, c.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTeamWarning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		teams  []string // directories with a config.json
		team   string
		wantOK bool
		want   string
	}{
		{"exists", []string{"my-team"}, "my-team", false, ""},
		{"typo", []string{"my-team", "other"}, "my-teem", true,
			`"my-teem" does not exist (no HOME/.claude/teams/my-teem/config.json); did you mean my-team? Choose a team with --team, ATM_TEAM or [core] default_team, or create this one: mkdir -p HOME/.claude/teams/my-teem/inboxes and a config.json listing its members`},
		{"far", []string{"alpha", "beta"}, "zzzzzz", true,
			`"zzzzzz" does not exist (no HOME/.claude/teams/zzzzzz/config.json); existing teams: alpha, beta. Choose a team with --team, ATM_TEAM or [core] default_team, or create this one: mkdir -p HOME/.claude/teams/zzzzzz/inboxes and a config.json listing its members`},
		{"none", nil, "default", true,
			`"default" does not exist (no HOME/.claude/teams/default/config.json); there are no teams in HOME/.claude/teams yet. Choose a team with --team, ATM_TEAM or [core] default_team, or create this one: mkdir -p HOME/.claude/teams/default/inboxes and a config.json listing its members`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, tm := range tc.teams {
				write(t, filepath.Join(f.home, ".claude", "teams", tm, "config.json"), `{"name":"`+tm+`"}`)
			}
			write(t, filepath.Join(f.home, ".claude", "teams", "no-config", "inboxes", "x.json"), "[]") // not a team
			c := f.load(t, Flags{Team: ptr(tc.team)})
			w, ok := c.TeamWarning()
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (%v)", ok, tc.wantOK, w)
			}
			if !ok {
				return
			}
			want := Warning{File: "flag --team", Key: "team", Message: replaceHome(tc.want, f.home)}
			if diff := cmp.Diff(want, w); diff != "" {
				t.Errorf("warning (-want +got):\n%s", diff)
			}
		})
	}
}

func replaceHome(s, home string) string { return strings.ReplaceAll(s, "HOME", home) }

func TestIdentityAdvice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags Flags
		env   map[string]string
		file  string
		want  string
	}{
		{"flag", Flags{Identity: ptr("arch")}, nil, "",
			"the identity is the flag --identity arch of this server's registration, which every window that shares it passes: remove --identity from the registration (.mcp.json or claude mcp add) and start each Claude Code window with its own identity: ATM_AGENT_MCP_IDENTITY=NAME claude (a flag outranks the variable)"},
		{"env", Flags{}, map[string]string{"ATM_AGENT_MCP_IDENTITY": "w1"}, "",
			"the identity comes from ATM_AGENT_MCP_IDENTITY=w1 in this window's environment: start this window with another value (ATM_AGENT_MCP_IDENTITY=NAME claude)"},
		{"file", Flags{}, nil, "[plugins.atm-agent-mcp]\nidentity = \"proj\"\n",
			"the identity is file REPO (plugins.atm-agent-mcp.identity), which every window in this project reads: start each Claude Code window with its own identity: ATM_AGENT_MCP_IDENTITY=NAME claude (the variable outranks the file)"},
		{"default", Flags{}, nil, "",
			"start each Claude Code window with its own identity: ATM_AGENT_MCP_IDENTITY=NAME claude (the default identity is the same for every window)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for k, v := range tc.env {
				f.env[k] = v
			}
			if tc.file != "" {
				write(t, f.repoFile(), tc.file)
			}
			got := f.load(t, tc.flags).IdentityAdvice()
			want := tc.want
			want = strings.ReplaceAll(want, "REPO", f.repoFile())
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
