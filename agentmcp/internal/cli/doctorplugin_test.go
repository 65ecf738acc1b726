package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPluginMismatch: the same version, or an unknown one, is no
// mismatch; an older binary is told to be replaced, an older plugin to be
// updated; versions compare number by number.
func TestPluginMismatch(t *testing.T) {
	for _, tc := range []struct {
		built, plugin string
		want          string // regexp; "" for no mismatch
	}{
		{"0.4.0", "0.4.0", ""},
		{"", "0.4.0", ""},
		{"0.4.0", "", ""},
		{"0.4.0", "0.10.0", `^this atm-agent-mcp \(.*\) was built with plugin 0\.4\.0, older than the plugin \(0\.10\.0\): .*install the atm-agent-mcp of plugin 0\.10\.0 \(from a clone: git pull && make install\)`},
		{"0.10.0", "0.9.9", `^the plugin \(0\.9\.9\) is older than this atm-agent-mcp \(.*\), which was built with plugin 0\.10\.0: update the plugin .*claude plugin update atm-agent-mcp@atm-agent-mcp`},
	} {
		msg, ok := pluginMismatch(tc.built, tc.plugin)
		if ok != (tc.want != "") || tc.want != "" && !regexp.MustCompile(tc.want).MatchString(msg) {
			t.Errorf("pluginMismatch(%q, %q) = %q, %v; want %s", tc.built, tc.plugin, msg, ok, tc.want)
		}
	}
}

// TestDoctorPlugin: the plugin check compares this binary's plugin version
// with the launcher's, else with the installed plugin's, and with the
// atm-agent-mcp first on PATH.
func TestDoctorPlugin(t *testing.T) {
	installed := func(version string) string {
		return `{"version":2,"plugins":{"other@x":[{"scope":"user","version":"9.9.9"}],` +
			`"atm-agent-mcp@atm-agent-mcp":[{"scope":"user","installPath":"/x","version":"` + version + `"}]}}`
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		installed string // installed_plugins.json; "" for none
		onPath    string // a binary first on PATH answering plugin-version so ("-": not at all); "" for none
		want      check
	}{
		{name: "not installed", want: check{Status: statusSkip, Detail: `^the Claude Code plugin is not installed \(not in .*/\.claude/plugins/installed_plugins\.json\) \(this binary: plugin 0\.4\.0\)$`}},
		{name: "installed, the same version", installed: installed("0.4.0"),
			want: check{Status: statusOK, Detail: `^atm-agent-mcp@atm-agent-mcp 0\.4\.0 is installed \(user scope\), the version this binary was built with \(this binary: plugin 0\.4\.0\)$`}},
		{name: "installed, newer", installed: installed("0.5.0"),
			want: check{Status: statusWarn, Detail: `^atm-agent-mcp@atm-agent-mcp 0\.5\.0 is installed \(user scope\) \(this binary: plugin 0\.4\.0\)$`,
				Fix: `^this atm-agent-mcp .* was built with plugin 0\.4\.0, older than the plugin \(0\.5\.0\)`}},
		{name: "the launcher's version wins", env: map[string]string{EnvPluginVersion: "0.3.0"}, installed: installed("0.4.0"),
			want: check{Status: statusWarn, Detail: `^started by the launcher of plugin 0\.3\.0 \(this binary: plugin 0\.4\.0\)$`,
				Fix: `^the plugin \(0\.3\.0\) is older than this atm-agent-mcp`}},
		{name: "the launcher's, the same", env: map[string]string{EnvPluginVersion: "0.4.0"},
			want: check{Status: statusOK, Detail: `^started by the launcher of plugin 0\.4\.0, the version this binary was built with`}},
		{name: "a stale build first on PATH", installed: installed("0.4.0"), onPath: "-",
			want: check{Status: statusWarn, Detail: `^the atm-agent-mcp first on PATH, .*/atm-agent-mcp, is another binary, built with an older plugin \(it has no plugin-version command\); atm-agent-mcp@atm-agent-mcp 0\.4\.0 is installed`,
				Fix: `^replace or remove .*/atm-agent-mcp \(make install or go install puts the new one in \$GOBIN or ~/go/bin, which must come first on PATH\)`}},
		{name: "another build of the same version on PATH", installed: installed("0.4.0"), onPath: "0.4.0",
			want: check{Status: statusOK, Detail: `^atm-agent-mcp@atm-agent-mcp 0\.4\.0 is installed`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			env := map[string]string{"HOME": home, "PATH": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			if tc.installed != "" {
				writeFile(t, filepath.Join(home, ".claude", "plugins", "installed_plugins.json"), tc.installed, 0o644)
			}
			if tc.onPath != "" {
				answer := "exit 2"
				if tc.onPath != "-" {
					answer = "echo " + tc.onPath
				}
				writeFile(t, filepath.Join(env["PATH"], "atm-agent-mcp"), "#!/bin/sh\n"+answer+"\n", 0o755)
			}
			d := &doctor{getenv: func(k string) string { return env[k] }, pluginVersion: "0.4.0"}
			got := d.plugin(context.Background())
			matchCheck(t, got, tc.want)
		})
	}
}

// TestDoctorClaudeCache: a failure of the plugin's server that Claude Code
// cached is reported until it expires (15 minutes, or its own ttlMs), with
// how to clear it; other servers' entries are not ours.
func TestDoctorClaudeCache(t *testing.T) {
	now := time.UnixMilli(1795825915448)
	ms := func(d time.Duration) string { return itoa(now.Add(d).UnixMilli()) }
	for _, tc := range []struct {
		name  string
		cache string // "" for no file
		want  check
	}{
		{name: "no file", want: check{Status: statusOK, Detail: `^Claude Code has cached no failure of the atm-agent-mcp plugin's server \(.*/\.claude/mcp-needs-auth-cache\.json\)$`}},
		{name: "another server's", cache: `{"plugin:other:x":{"timestamp":` + ms(-time.Minute) + `}}`,
			want: check{Status: statusOK, Detail: `^Claude Code has cached no failure`}},
		{name: "ours, a minute ago", cache: `{"plugin:atm-agent-mcp:codex":{"timestamp":` + ms(-time.Minute) + `,"id":"3c6ba5eabc4c858f"}}`,
			want: check{Status: statusMissing,
				Detail: `^plugin:atm-agent-mcp:codex failed at [0-9:]+: Claude Code starts sessions without it until [0-9:]+ \(.*/\.claude/mcp-needs-auth-cache\.json; .claude mcp list. still says Connected\)$`,
				Fix:    `then clear the entry: in an interactive session run /mcp, select the server and Reconnect; or delete the file: rm .*/\.claude/mcp-needs-auth-cache\.json`}},
		{name: "ours, expired", cache: `{"plugin:atm-agent-mcp:codex":{"timestamp":` + ms(-16*time.Minute) + `}}`,
			want: check{Status: statusOK, Detail: `^an earlier failure of plugin:atm-agent-mcp:codex is cached in .*, but it has expired: Claude Code tries the server again$`}},
		{name: "ours, with a ttl of its own", cache: `{"plugin:atm-agent-mcp:codex":{"timestamp":` + ms(-16*time.Minute) + `,"ttlMs":3600000}}`,
			want: check{Status: statusMissing, Detail: `^plugin:atm-agent-mcp:codex failed at`, Fix: `/mcp`}},
		{name: "unreadable", cache: `not json`,
			want: check{Status: statusWarn, Detail: `^cannot read Claude Code's cache of failed MCP servers: `, Fix: `^delete .*mcp-needs-auth-cache\.json`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.cache != "" {
				writeFile(t, filepath.Join(home, ".claude", claudeCacheFile), tc.cache, 0o600)
			}
			d := &doctor{getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
			matchCheck(t, d.claudeCache(now), tc.want)
		})
	}
	// CLAUDE_CONFIG_DIR moves Claude Code's directory.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, claudeCacheFile), `{"plugin:atm-agent-mcp:codex":{"timestamp":`+ms(0)+`}}`, 0o600)
	d := &doctor{getenv: func(k string) string { return map[string]string{"CLAUDE_CONFIG_DIR": dir}[k] }}
	if got := d.claudeCache(now); got.Status != statusMissing {
		t.Errorf("with CLAUDE_CONFIG_DIR: %+v", got)
	}
}

// matchCheck compares a check with want, whose Detail and Fix are
// regular expressions ("" for Fix: none).
func matchCheck(t *testing.T, got, want check) {
	t.Helper()
	if got.Status != want.Status || !regexp.MustCompile(want.Detail).MatchString(got.Detail) ||
		(want.Fix == "") != (got.Fix == "") || want.Fix != "" && !regexp.MustCompile(want.Fix).MatchString(got.Fix) {
		t.Errorf("got %s", cmp.Diff(want, got))
	}
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
