package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestHosts: a host section resolves to what ssh and the host need, its
// fields taking the highest file and its agents table merging entry by
// entry; what a host does not set is this machine's command by name, on
// the host's PATH.
func TestHosts(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), `
[plugins.atm-agent-mcp]
codex_bin = "bin/codex"
host = "box"

[plugins.atm-agent-mcp.agents.claude]
command = "/opt/claude/bin/claude-agent-acp"

[plugins.atm-agent-mcp.agents.qwen]
command = ["npx", "-y", "@qwen-code/qwen-code"]
args = ["--acp"]

[plugins.atm-agent-mcp.hosts.box]
ssh = "me@big-box.example"
ssh_args = ["-F", "/home/me/.ssh/work_config", "-J", "jump"]
root = "/srv/work"
codex_bin = "/usr/local/bin/codex-0.171"

[plugins.atm-agent-mcp.hosts.box.agents]
claude = ["node", "/srv/tools/claude-agent-acp/dist/index.js"]

[plugins.atm-agent-mcp.hosts.tiny]
ssh = "tiny"
`)
	write(t, f.global(), `
[plugins.atm-agent-mcp.hosts.box]
ssh = "ignored-under-the-repo-file"
root = "/ignored"

[plugins.atm-agent-mcp.hosts.box.agents]
opencode = "/home/me/.opencode/bin/opencode"
`)
	c := f.load(t, Flags{})
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	want := map[string]HostConfig{
		"box": {
			Name: "box", SSH: "me@big-box.example", SSHArgs: []string{"-F", "/home/me/.ssh/work_config", "-J", "jump"},
			Root: "/srv/work", CodexBin: "/usr/local/bin/codex-0.171",
			Agents: map[string]HostCommand{
				"claude":   {Command: "node", Args: []string{"/srv/tools/claude-agent-acp/dist/index.js"}},
				"gemini":   {Command: "gemini", Args: []string{}},
				"opencode": {Command: "/home/me/.opencode/bin/opencode", Args: []string{}},
				"qwen":     {Command: "npx", Args: []string{"-y", "@qwen-code/qwen-code"}},
			},
			Files: []string{f.repoFile(), f.global()},
		},
		"tiny": {
			Name: "tiny", SSH: "tiny", SSHArgs: []string{}, CodexBin: "codex",
			Agents: map[string]HostCommand{
				"claude":   {Command: "claude-agent-acp", Args: []string{}},
				"gemini":   {Command: "gemini", Args: []string{}},
				"opencode": {Command: "opencode", Args: []string{}},
				"qwen":     {Command: "npx", Args: []string{"-y", "@qwen-code/qwen-code"}},
			},
			Files: []string{f.repoFile()},
		},
	}
	if diff := cmp.Diff(want, c.Hosts, cmpopts.IgnoreFields(HostConfig{}, "Sources"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
	if c.Host != "box" {
		t.Errorf("Host = %q, want box", c.Host)
	}
	wantSources := map[string]string{
		"host":                      "file " + f.repoFile() + " (plugins.atm-agent-mcp.host)",
		"hosts.box.ssh":             "file " + f.repoFile() + " (plugins.atm-agent-mcp.hosts.box.ssh)",
		"hosts.box.agents.claude":   "file " + f.repoFile() + " (plugins.atm-agent-mcp.hosts.box.agents.claude)",
		"hosts.box.agents.opencode": "file " + f.global() + " (plugins.atm-agent-mcp.hosts.box.agents.opencode)",
		"hosts.box.agents.gemini":   "default (the agent's command, by name, on the host's PATH)",
		"hosts.tiny.codex_bin":      "default (codex_bin's name on the host's PATH)",
		"hosts.tiny.root":           "default (the home directory on the host)",
		"hosts.tiny.ssh_args":       "default",
	}
	for k, w := range wantSources {
		if got := c.Sources[k].String(); got != w {
			t.Errorf("source of %s = %q, want %q", k, got, w)
		}
	}
	box, tiny := c.Hosts["box"], c.Hosts["tiny"]
	lines := []struct {
		got, want []string
	}{
		{box.AgentCommandLine(c.Agents["claude"]), []string{"node", "/srv/tools/claude-agent-acp/dist/index.js"}},
		{tiny.AgentCommandLine(c.Agents["qwen"]), []string{"npx", "-y", "@qwen-code/qwen-code", "--acp"}},
		{tiny.AgentCommandLine(c.Agents["gemini"]), []string{"gemini", "--acp"}},
		{tiny.AgentVersionCommand(c.Agents["qwen"]), []string{"npx", "-y", "@qwen-code/qwen-code", "--version"}},
		{box.AgentVersionCommand(c.Agents["claude"]), []string{"node", "/srv/tools/claude-agent-acp/dist/index.js", "--version"}},
	}
	for _, l := range lines {
		if diff := cmp.Diff(l.want, l.got); diff != "" {
			t.Errorf("command line (-want +got):\n%s", diff)
		}
	}

	entries := map[string]any{}
	for _, e := range c.Entries() {
		if strings.HasPrefix(e.Key, "hosts.tiny.") || e.Key == "host" || e.Key == "hosts.box.agents.claude" {
			entries[e.Key] = e.Value
		}
	}
	wantEntries := map[string]any{
		"host":                    "box",
		"hosts.box.agents.claude": []string{"node", "/srv/tools/claude-agent-acp/dist/index.js"},
		"hosts.tiny.ssh":          "tiny", "hosts.tiny.ssh_args": []string{}, "hosts.tiny.root": nil, "hosts.tiny.codex_bin": "codex",
		"hosts.tiny.agents.claude": "claude-agent-acp", "hosts.tiny.agents.gemini": "gemini", "hosts.tiny.agents.opencode": "opencode",
		"hosts.tiny.agents.qwen": []string{"npx", "-y", "@qwen-code/qwen-code"},
	}
	if diff := cmp.Diff(wantEntries, entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestHostFor: where an agent runs: a host from the environment, then
// the role's, then the kind's, then the instance's; local is this
// machine.
func TestHostFor(t *testing.T) {
	file := `
[plugins.atm-agent-mcp]
host = "box"
[plugins.atm-agent-mcp.hosts.box]
ssh = "box"
[plugins.atm-agent-mcp.hosts.gpu]
ssh = "gpu"
[plugins.atm-agent-mcp.roles.trainer]
host = "gpu"
[plugins.atm-agent-mcp.roles.reviewer]
host = "local"
[plugins.atm-agent-mcp.agents.claude]
host = "local"
[plugins.atm-agent-mcp.agents.opencode]
host = "gpu"
`
	tests := []struct {
		name       string
		env        string // ATM_AGENT_MCP_HOST
		kind, role string
		want       string
		wantSrc    string
	}{
		{"codex takes the instance's", "", CodexAgent, "", "box", "plugins.atm-agent-mcp.host"},
		{"a kind without one too", "", "gemini", "", "box", "plugins.atm-agent-mcp.host"},
		{"the kind's own", "", "opencode", "", "gpu", "plugins.atm-agent-mcp.agents.opencode.host"},
		{"a kind kept here", "", "claude", "", "", "plugins.atm-agent-mcp.agents.claude.host"},
		{"the role over the kind", "", "claude", "trainer", "gpu", "plugins.atm-agent-mcp.roles.trainer.host"},
		{"a role kept here", "", "opencode", "reviewer", "", "plugins.atm-agent-mcp.roles.reviewer.host"},
		{"an unknown role: as none", "", CodexAgent, "nobody", "box", "plugins.atm-agent-mcp.host"},
		{"the environment over all", "local", "opencode", "trainer", "", "ATM_AGENT_MCP_HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.repoFile(), file)
			if tt.env != "" {
				f.env["ATM_AGENT_MCP_HOST"] = tt.env
			}
			c := f.load(t, Flags{})
			got, src := c.HostFor(tt.kind, tt.role)
			if got != tt.want || !strings.Contains(src.String(), tt.wantSrc) {
				t.Errorf("HostFor(%s, %s) = %q from %s, want %q from %s", tt.kind, tt.role, got, src, tt.want, tt.wantSrc)
			}
		})
	}
}

// TestHostErrors: a host that cannot be used, or a host named that is not
// defined, stops the load naming the file, key and what is expected.
func TestHostErrors(t *testing.T) {
	const box = "[plugins.atm-agent-mcp.hosts.box]\nssh = \"box\"\n"
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"no ssh", "[plugins.atm-agent-mcp.hosts.box]\nroot = \"/srv\"\n",
			[]string{"plugins.atm-agent-mcp.hosts.box.ssh = (missing): expected the host's ssh destination"}},
		{"an option as destination", "[plugins.atm-agent-mcp.hosts.box]\nssh = \"-oProxyCommand=evil\"\n",
			[]string{`hosts.box.ssh = "-oProxyCommand=evil": expected an ssh destination`}},
		{"relative root", box + "root = \"work\"\n", []string{`hosts.box.root = "work": expected an absolute path on the host`}},
		{"ssh_args not a list", box + "ssh_args = \"-F x\"\n", []string{`hosts.box.ssh_args = "-F x": expected an array of strings`}},
		{"codex among the agents", box + "[plugins.atm-agent-mcp.hosts.box.agents]\ncodex = \"codex\"\n",
			[]string{"hosts.box.agents.codex", "the host's codex_bin"}},
		{"an unknown kind", box + "[plugins.atm-agent-mcp.hosts.box.agents]\nclaud = \"claude-agent-acp\"\n",
			[]string{"hosts.box.agents.claud", "one of claude, gemini, opencode (did you mean claude?)"}},
		{"a program with a blank", box + "[plugins.atm-agent-mcp.hosts.box.agents]\nclaude = \"node x.js\"\n",
			[]string{`hosts.box.agents.claude = "node x.js": expected a program on the host`}},
		{"a host named local", "[plugins.atm-agent-mcp.hosts.local]\nssh = \"x\"\n", []string{"hosts.local", `"local" is this machine`}},
		{"a bad host name", "[plugins.atm-agent-mcp.hosts.\"a b\"]\nssh = \"x\"\n", []string{"hosts.a b", "a host named with letters"}},
		{"an undefined host", box + "[plugins.atm-agent-mcp]\nhost = \"bx\"\n",
			[]string{`plugins.atm-agent-mcp.host = "bx": expected "local" or a defined host: box (did you mean box?)`}},
		{"no hosts at all", "[plugins.atm-agent-mcp]\nhost = \"box\"\n", []string{"(none are defined)"}},
		{"a role's", box + "[plugins.atm-agent-mcp.roles.w]\nhost = \"gpu\"\n", []string{`roles.w.host = "gpu"`}},
		{"a kind's", box + "[plugins.atm-agent-mcp.agents.claude]\nhost = \"gpu\"\n", []string{`agents.claude.host = "gpu"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.repoFile(), tt.file)
			_, err := Load(f.opts(Flags{}))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestHostWarnings: a misspelt key of a host section, or of the plugin's
// host keys, is a warning with the key it probably meant.
func TestHostWarnings(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), `
[plugins.atm-agent-mcp]
hst = "box"

[plugins.atm-agent-mcp.hosts.box]
ssh = "box"
ssh_arg = ["-v"]
rooot = "/srv"
`)
	c := f.load(t, Flags{})
	file := filepath.Clean(f.repoFile())
	want := []Warning{
		{File: file, Key: "plugins.atm-agent-mcp.hst", Message: "unknown key, ignored (did you mean host?)"},
		{File: file, Key: "plugins.atm-agent-mcp.hosts.box.rooot", Message: "unknown host key, ignored (did you mean root?)"},
		{File: file, Key: "plugins.atm-agent-mcp.hosts.box.ssh_arg", Message: "unknown host key, ignored (did you mean ssh_args?)"},
	}
	if diff := cmp.Diff(want, c.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
