package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
)

// fixture is a home, a git repository and a working directory inside it.
type fixture struct {
	home, repo, cwd string
	env             map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{
		home: filepath.Join(root, "home"),
		repo: filepath.Join(root, "work", "repo"),
	}
	f.cwd = filepath.Join(f.repo, "src", "pkg")
	for _, d := range []string{f.home, filepath.Join(f.repo, ".git"), f.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Git looks no higher than root: the machine's temporary directory
	// may itself lie in a git work tree.
	f.env = map[string]string{"ATM_HOME": f.home, "HOME": f.home, gitctx.CeilingEnv: root}
	return f
}

func (f *fixture) global() string { return GlobalFile(f.home) }
func (f *fixture) repoFile() string {
	return filepath.Join(f.repo, RepoFileName)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) opts(flags Flags) LoadOptions {
	return LoadOptions{
		Flags: flags,
		Cwd:   f.cwd,
		Env: func(k string) (string, bool) {
			v, ok := f.env[k]
			return v, ok
		},
	}
}

func (f *fixture) load(t *testing.T, flags Flags) *Config {
	t.Helper()
	c, err := Load(f.opts(flags))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

func TestDefaults(t *testing.T) {
	f := newFixture(t)
	c := f.load(t, Flags{})
	want := &Config{
		Home: f.home, Team: "default", Identity: "codex", DefaultIdentity: "codex",
		CodexBin: "codex", Backend: "auto", Sandbox: "workspace-write", ApprovalPolicy: "on-request",
		MailPollInterval: 5 * time.Second, IdleTimeout: 5 * time.Minute, PersistThreads: true,
		RequestTimeout: 300 * time.Second, MaxConcurrentThreads: 10, AutoMail: true,
		MaxMailMessages: 10, MaxMailMessageLength: 4096, ElicitationTimeout: 300 * time.Second,
		MaxResultChars: 80000, EventBufferSize: 500, ProgressInterval: time.Minute,
		ApprovalFallback: "deny", HandshakeTimeout: 60 * time.Second, CodexRestart: "manual", MCPProtocol: "auto", LogLevel: "info", Roles: map[string]Role{},
		LeadPush: true, Isolation: "none", WorktreePorts: 10, SubAgentWait: 300 * time.Second,
	}
	if diff := cmp.Diff(want, c, cmpIgnoreSources); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if got := c.EffectiveModel(); got != "" {
		t.Errorf("EffectiveModel = %q, want none (FR-12.4)", got)
	}
	if got := c.CodexArgs(); len(got) != 0 {
		t.Errorf("CodexArgs = %q, want none", got)
	}
	for _, e := range c.Entries() {
		if e.Key == "home" {
			continue
		}
		if strings.HasPrefix(e.Key, "agents.") && e.Source.Kind == SourcePreset {
			continue // see TestAgentPresets
		}
		if e.Source.Kind != SourceDefault {
			t.Errorf("%s: source %v, want default", e.Key, e.Source)
		}
	}
}

var cmpIgnoreSources = cmp.FilterPath(func(p cmp.Path) bool {
	s := p.String()
	return s == "Sources" || s == "Warnings" || s == "Files" || s == "Agents" || s == "Hosts" // see agents_test.go, hosts_test.go
}, cmp.Ignore())

// TestLayers sets one key in every layer and removes the layers from the
// top, checking the value and source each time.
func TestLayers(t *testing.T) {
	f := newFixture(t)
	explicit := filepath.Join(f.home, "explicit.toml")
	write(t, f.global(), "[plugins.atm-agent-mcp]\nmodel = \"global\"\n")
	write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nmodel = \"repo\"\n")
	write(t, explicit, "[plugins.atm-agent-mcp]\nmodel = \"explicit\"\n")

	tests := []struct {
		name     string
		flags    Flags
		env      map[string]string
		want     string
		wantKind SourceKind
		wantFrom string
	}{
		{"flag", Flags{Model: ptr("flag"), Config: ptr(explicit)}, map[string]string{"ATM_AGENT_MCP_MODEL": "env"}, "flag", SourceFlag, "--model"},
		{"env", Flags{Config: ptr(explicit)}, map[string]string{"ATM_AGENT_MCP_MODEL": "env"}, "env", SourceEnv, "ATM_AGENT_MCP_MODEL"},
		{"config flag", Flags{Config: ptr(explicit)}, nil, "explicit", SourceFile, explicit},
		{"ATM_CONFIG", Flags{}, map[string]string{"ATM_CONFIG": explicit}, "explicit", SourceFile, explicit},
		{"repo", Flags{}, nil, "repo", SourceFile, f.repoFile()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				f.env[k] = v
			}
			defer func() {
				for k := range tt.env {
					delete(f.env, k)
				}
			}()
			c := f.load(t, tt.flags)
			src := c.Sources["model"]
			if c.Model != tt.want || src.Kind != tt.wantKind || src.Detail != tt.wantFrom {
				t.Errorf("model = %q from %v, want %q from %s %s", c.Model, src, tt.want, tt.wantKind, tt.wantFrom)
			}
		})
	}
	t.Run("global", func(t *testing.T) {
		os.Remove(f.repoFile())
		c := f.load(t, Flags{})
		if c.Model != "global" || c.Sources["model"].Detail != f.global() || c.Sources["model"].Key != "plugins.atm-agent-mcp.model" {
			t.Errorf("model = %q from %v, want global from %s", c.Model, c.Sources["model"], f.global())
		}
	})
	t.Run("default", func(t *testing.T) {
		os.Remove(f.global())
		c := f.load(t, Flags{})
		if c.Model != "" || c.Sources["model"].Kind != SourceDefault {
			t.Errorf("model = %q from %v, want none by default", c.Model, c.Sources["model"])
		}
	})
}

// TestEveryKey sets every plugin key in a file and then every key through the
// environment, and checks that each reaches the Config.
func TestEveryKey(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.repo, "prompts", "base.md"), "base")
	write(t, f.repoFile(), `
[core]
default_team = "atm-dev"
identity = "core-id"

[plugins.atm-agent-mcp]
codex_bin = "bin/codex"
identity = "codex-architect"
default_identity = "codex-helper"
backend = "app-server"
model = "o3"
fast_model = "spark"
reasoning_effort = "high"
sandbox = "read-only"
approval_policy = "never"
subagents = true
base_prompt_file = "prompts/base.md"
extra_instructions_file = "~/extra.md"
mail_poll_interval_ms = 250
idle_timeout_ms = 0
persist_threads = false
request_timeout_secs = 42
progress_interval_ms = 0
max_concurrent_threads = 3
auto_mail = false
max_mail_messages = 4
max_mail_message_length = 100
elicitation_timeout_secs = 7
approval_fallback = "queue"
mcp_protocol = "2025-11-25"
handshake_timeout_secs = 7
codex_restart = "on_demand"
max_result_chars = 5000
event_buffer_size = 50
lead_push = false
log_level = "debug"
log_file = "logs/proxy.log"
isolation = "worktree"
worktree_base = "main"
worktree_setup = "make deps"
worktree_ports = 0
budget_tokens = 200000
team_budget_tokens = 1000000
budget_interrupt = true
merge_check = "make test"
host = "box"
busy_mail = "queue"
sub_agent_wait_secs = 30

[plugins.atm-agent-mcp.hosts.box]
ssh = "box"

[plugins.atm-agent-mcp.per_thread_auto_mail]
codex-reviewer = true

[plugins.atm-agent-mcp.roles.worker]
model = "gpt-5.3-codex"
reasoning_effort = "low"
sandbox = "workspace-write"
approval_policy = "on-request"
isolation = "none"
host = "local"
budget_tokens = 50000
busy_mail = "steer"

[plugins.atm-agent-mcp.prices."gpt-5.3-codex"]
input = 1.25
cached_input = 0.125
output = 10

[plugins.atm-agent-mcp.prices.o3]
input = 2
output = 8
currency = "EUR"
`)
	c := f.load(t, Flags{})
	want := &Config{
		Home: f.home, Team: "atm-dev", Identity: "codex-architect", DefaultIdentity: "codex-helper",
		CodexBin: filepath.Join(f.repo, "bin", "codex"), Backend: "app-server",
		Model: "o3", FastModel: "spark", ReasoningEffort: "high", Sandbox: "read-only", ApprovalPolicy: "never",
		Subagents:      ptr(true),
		BasePromptFile: filepath.Join(f.repo, "prompts", "base.md"), ExtraInstructionsFile: filepath.Join(f.home, "extra.md"),
		MailPollInterval: 250 * time.Millisecond, IdleTimeout: 0, PersistThreads: false,
		RequestTimeout: 42 * time.Second, MaxConcurrentThreads: 3, AutoMail: false,
		PerThreadAutoMail: map[string]bool{"codex-reviewer": true},
		MaxMailMessages:   4, MaxMailMessageLength: 100, ElicitationTimeout: 7 * time.Second,
		MaxResultChars: 5000, EventBufferSize: 50, ProgressInterval: 0,
		ApprovalFallback: "queue", HandshakeTimeout: 7 * time.Second, CodexRestart: "on_demand", MCPProtocol: "2025-11-25", LogLevel: "debug", LogFile: filepath.Join(f.repo, "logs", "proxy.log"),
		Isolation: "worktree", WorktreeBase: "main", WorktreeSetup: "make deps", WorktreePorts: 0, Host: "box", MergeCheck: "make test",
		BusyMail: "queue", SubAgentWait: 30 * time.Second,
		Roles:        map[string]Role{"worker": {Model: "gpt-5.3-codex", ReasoningEffort: "low", Sandbox: "workspace-write", ApprovalPolicy: "on-request", Isolation: "none", Host: "local", BudgetTokens: 50000, BusyMail: "steer"}},
		BudgetTokens: 200000, TeamBudgetTokens: 1000000, BudgetInterrupt: true,
		Prices: map[string]Price{"gpt-5.3-codex": {Input: 1.25, CachedInput: 0.125, Output: 10, Currency: "USD"},
			"o3": {Input: 2, CachedInput: 2, Output: 8, Currency: "EUR"}},
	}
	if diff := cmp.Diff(want, c, cmpIgnoreSources); diff != "" {
		t.Errorf("from file (-want +got):\n%s", diff)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	if got, want := c.CodexArgs(), []string{"-c", `model_reasoning_effort="high"`, "-c", "features.multi_agent=true"}; !cmp.Equal(got, want) {
		t.Errorf("CodexArgs = %q, want %q", got, want)
	}
	if c.AutoMailFor("codex-reviewer") != true || c.AutoMailFor("codex-architect") != false {
		t.Errorf("AutoMailFor: per-thread override not applied")
	}
	if c.IsolationFor("worker") != "none" || c.IsolationFor("") != "worktree" {
		t.Errorf("IsolationFor: worker %q, no role %q; want the preset's none, else worktree", c.IsolationFor("worker"), c.IsolationFor(""))
	}

	// The same through the environment, over the file.
	env := map[string]string{
		"ATM_TEAM": "env-team", "ATM_AGENT_MCP_IDENTITY": "env-id", "ATM_AGENT_MCP_DEFAULT_IDENTITY": "env-default",
		"ATM_AGENT_MCP_CODEX_BIN": "codex-nightly", "ATM_AGENT_MCP_BACKEND": "mcp-server",
		"ATM_AGENT_MCP_MODEL": "env-model", "ATM_AGENT_MCP_FAST_MODEL": "env-fast",
		"ATM_AGENT_MCP_REASONING_EFFORT": "minimal", "ATM_AGENT_MCP_SANDBOX": "danger-full-access",
		"ATM_AGENT_MCP_APPROVAL_POLICY": "untrusted", "ATM_AGENT_MCP_SUBAGENTS": "false",
		"ATM_AGENT_MCP_BASE_PROMPT_FILE": "", "ATM_AGENT_MCP_EXTRA_INSTRUCTIONS_FILE": "x.md",
		"ATM_AGENT_MCP_MAIL_POLL_INTERVAL_MS": "1000", "ATM_AGENT_MCP_IDLE_TIMEOUT_MS": "60000",
		"ATM_AGENT_MCP_PERSIST_THREADS": "true", "ATM_AGENT_MCP_REQUEST_TIMEOUT_SECS": "2m", "ATM_AGENT_MCP_PROGRESS_INTERVAL_MS": "1500",
		"ATM_AGENT_MCP_MAX_CONCURRENT_THREADS": "20", "ATM_AGENT_MCP_AUTO_MAIL": "yes",
		"ATM_AGENT_MCP_PER_THREAD_AUTO_MAIL": "codex-reviewer=false, codex-x=1",
		"ATM_AGENT_MCP_MAX_MAIL_MESSAGES":    "2", "ATM_AGENT_MCP_MAX_MAIL_MESSAGE_LENGTH": "50",
		"ATM_AGENT_MCP_ELICITATION_TIMEOUT_SECS": "9", "ATM_AGENT_MCP_APPROVAL_FALLBACK": "approve", "ATM_AGENT_MCP_MCP_PROTOCOL": "auto", "ATM_AGENT_MCP_HANDSHAKE_TIMEOUT_SECS": "8", "ATM_AGENT_MCP_CODEX_RESTART": "manual",
		"ATM_AGENT_MCP_MAX_RESULT_CHARS": "3000", "ATM_AGENT_MCP_EVENT_BUFFER_SIZE": "20",
		"ATM_AGENT_MCP_LEAD_PUSH": "true", "CLAUDE_CODE_MESSAGING_SOCKET": "/tmp/cc.sock", "CLAUDE_CODE_MESSAGING_TOKEN": "tok",
		"ATM_AGENT_MCP_LOG_LEVEL": "warn", "ATM_AGENT_MCP_LOG_FILE": "/var/log/x.log",
		"ATM_AGENT_MCP_ROLE":      "worker",
		"ATM_AGENT_MCP_ISOLATION": "worktree", "ATM_AGENT_MCP_WORKTREE_BASE": "origin/main", "ATM_AGENT_MCP_WORKTREE_SETUP": "npm ci",
		"ATM_AGENT_MCP_WORKTREE_PORTS": "5", "ATM_AGENT_MCP_HOST": "local", "ATM_AGENT_MCP_MERGE_CHECK": "go test ./...",
		"ATM_AGENT_MCP_BUDGET_TOKENS": "7000", "ATM_AGENT_MCP_TEAM_BUDGET_TOKENS": "9000", "ATM_AGENT_MCP_BUDGET_INTERRUPT": "no",
		"ATM_AGENT_MCP_BUSY_MAIL": "steer", "ATM_AGENT_MCP_SUB_AGENT_WAIT_SECS": "45",
	}
	for k, v := range env {
		f.env[k] = v
	}
	c = f.load(t, Flags{})
	want = &Config{
		Home: f.home, Team: "env-team", Identity: "env-id", DefaultIdentity: "env-default",
		ClaudeCode: true, // the messaging socket is Claude Code's
		CodexBin:   "codex-nightly", Backend: "mcp-server",
		Model: "env-model", FastModel: "env-fast", ReasoningEffort: "minimal", Sandbox: "danger-full-access", ApprovalPolicy: "untrusted",
		Subagents:             ptr(false),
		BasePromptFile:        filepath.Join(f.repo, "prompts", "base.md"), // blank variable = unset
		ExtraInstructionsFile: filepath.Join(f.cwd, "x.md"),
		MailPollInterval:      time.Second, IdleTimeout: time.Minute, PersistThreads: true,
		RequestTimeout: 2 * time.Minute, MaxConcurrentThreads: 20, AutoMail: true,
		PerThreadAutoMail: map[string]bool{"codex-reviewer": false, "codex-x": true},
		MaxMailMessages:   2, MaxMailMessageLength: 50, ElicitationTimeout: 9 * time.Second,
		MaxResultChars: 3000, EventBufferSize: 20, ProgressInterval: 1500 * time.Millisecond,
		ApprovalFallback: "approve", HandshakeTimeout: 8 * time.Second, CodexRestart: "manual", MCPProtocol: "auto", LogLevel: "warn", LogFile: "/var/log/x.log", Role: "worker",
		LeadPush: true, MessagingSocket: "/tmp/cc.sock", MessagingToken: "tok",
		Isolation: "worktree", WorktreeBase: "origin/main", WorktreeSetup: "npm ci", WorktreePorts: 5, Host: "local", MergeCheck: "go test ./...",
		BusyMail: "steer", SubAgentWait: 45 * time.Second,
		Roles:        map[string]Role{"worker": {Model: "gpt-5.3-codex", ReasoningEffort: "low", Sandbox: "workspace-write", ApprovalPolicy: "on-request", Isolation: "none", Host: "local", BudgetTokens: 50000, BusyMail: "steer"}},
		BudgetTokens: 7000, TeamBudgetTokens: 9000, BudgetInterrupt: false,
		Prices: map[string]Price{"gpt-5.3-codex": {Input: 1.25, CachedInput: 0.125, Output: 10, Currency: "USD"},
			"o3": {Input: 2, CachedInput: 2, Output: 8, Currency: "EUR"}},
	}
	if diff := cmp.Diff(want, c, cmpIgnoreSources); diff != "" {
		t.Errorf("from env (-want +got):\n%s", diff)
	}
	for _, e := range c.Entries() {
		switch {
		case e.Key == "home" || e.Key == "config" || e.Key == "fast" || e.Key == "readonly" || e.Key == "resume" ||
			e.Key == "base_prompt_file" || strings.HasPrefix(e.Key, "roles.") || strings.HasPrefix(e.Key, "agents.") || strings.HasPrefix(e.Key, "hosts.") || strings.HasPrefix(e.Key, "prices."):
		case e.Source.Kind != SourceEnv:
			t.Errorf("%s: source %v, want env", e.Key, e.Source)
		}
	}
	if got, want := c.CodexArgs(), []string{"-c", `model_reasoning_effort="minimal"`, "-c", "features.multi_agent=false"}; !cmp.Equal(got, want) {
		t.Errorf("CodexArgs = %q, want %q", got, want)
	}
	if c.IsolationFor("worker") != "worktree" {
		t.Errorf("IsolationFor(worker) = %q: isolation from the environment outranks the preset", c.IsolationFor("worker"))
	}
}

func TestFlags(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nfast_model = \"spark\"\n[plugins.atm-agent-mcp.roles.architect]\nsandbox = \"read-only\"\n")
	c := f.load(t, Flags{
		Team: ptr("t"), Identity: ptr("i"), Role: ptr("architect"), Fast: ptr(true), Subagents: ptr(true),
		Sandbox: ptr("danger-full-access"), ApprovalPolicy: ptr("never"), Backend: ptr("mcp-server"),
		CodexBin: ptr("./codex"), Timeout: ptr("90"), LogLevel: ptr("error"), LogFile: ptr("p.log"), Resume: ptr(""),
	})
	want := map[string]any{
		"team": "t", "identity": "i", "role": "architect", "effective_model": "spark", "fast": true, "subagents": true,
		"sandbox": "danger-full-access", "approval_policy": "never", "backend": "mcp-server",
		"codex_bin": filepath.Join(f.cwd, "codex"), "request_timeout_secs": 90, "log_level": "error",
		"log_file": filepath.Join(f.cwd, "p.log"), "resume": "(most recent session of i)",
	}
	for _, e := range c.Entries() {
		w, ok := want[e.Key]
		if !ok {
			continue
		}
		delete(want, e.Key)
		if e.Value != w || e.Source.Kind != SourceFlag {
			t.Errorf("%s = %v from %v, want %v from a flag", e.Key, e.Value, e.Source, w)
		}
	}
	if len(want) != 0 {
		t.Errorf("keys missing from Entries: %v", want)
	}
	// An explicit flag beats the role preset.
	ts, err := c.ThreadDefaults("")
	if err != nil {
		t.Fatal(err)
	}
	if ts.Sandbox != "danger-full-access" {
		t.Errorf("role preset overrode --sandbox: %+v", ts)
	}
}

func TestIdentityChain(t *testing.T) {
	tests := []struct {
		name         string
		global, repo string
		env          map[string]string
		flag         *string
		want         string
		wantDefault  string
	}{
		{name: "default", want: "codex", wantDefault: "codex"},
		{name: "global core", global: "[core]\nidentity = \"g-core\"\n", want: "g-core", wantDefault: "codex"},
		{name: "repo core over global core", global: "[core]\nidentity = \"g-core\"\n", repo: "[core]\nidentity = \"r-core\"\n", want: "r-core", wantDefault: "codex"},
		{name: "ATM_IDENTITY over core", repo: "[core]\nidentity = \"r-core\"\n", env: map[string]string{"ATM_IDENTITY": "atm-env"}, want: "atm-env", wantDefault: "codex"},
		{name: "plugin in any file over ATM_IDENTITY and core",
			global: "[plugins.atm-agent-mcp]\nidentity = \"g-plugin\"\n", repo: "[core]\nidentity = \"r-core\"\n",
			env: map[string]string{"ATM_IDENTITY": "atm-env"}, want: "g-plugin", wantDefault: "codex"},
		{name: "ATM_AGENT_MCP_IDENTITY over plugin", repo: "[plugins.atm-agent-mcp]\nidentity = \"r-plugin\"\n",
			env: map[string]string{"ATM_AGENT_MCP_IDENTITY": "plugin-env"}, want: "plugin-env", wantDefault: "codex"},
		{name: "flag over everything", repo: "[plugins.atm-agent-mcp]\nidentity = \"r-plugin\"\n",
			env: map[string]string{"ATM_AGENT_MCP_IDENTITY": "plugin-env"}, flag: ptr("flag-id"), want: "flag-id", wantDefault: "codex"},
		{name: "default_identity", repo: "[plugins.atm-agent-mcp]\nidentity = \"inst\"\ndefault_identity = \"sess\"\n", want: "inst", wantDefault: "sess"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.global != "" {
				write(t, f.global(), tt.global)
			}
			if tt.repo != "" {
				write(t, f.repoFile(), tt.repo)
			}
			for k, v := range tt.env {
				f.env[k] = v
			}
			c := f.load(t, Flags{Identity: tt.flag})
			if c.Identity != tt.want || c.DefaultIdentity != tt.wantDefault {
				t.Errorf("identity %q (%v), default %q; want %q, %q", c.Identity, c.Sources["identity"], c.DefaultIdentity, tt.want, tt.wantDefault)
			}
		})
	}
}

func TestTeam(t *testing.T) {
	f := newFixture(t)
	write(t, f.global(), "[core]\ndefault_team = \"g\"\n")
	if c := f.load(t, Flags{}); c.Team != "g" {
		t.Errorf("team %q, want g", c.Team)
	}
	write(t, f.repoFile(), "[core]\ndefault_team = \"r\"\n")
	if c := f.load(t, Flags{}); c.Team != "r" {
		t.Errorf("team %q, want r", c.Team)
	}
	f.env["ATM_TEAM"] = "e"
	if c := f.load(t, Flags{}); c.Team != "e" {
		t.Errorf("team %q, want e", c.Team)
	}
	if c := f.load(t, Flags{Team: ptr("f")}); c.Team != "f" || c.Sources["team"].Detail != "--team" {
		t.Errorf("team %q, want f", c.Team)
	}
}

func TestRepoFileSearch(t *testing.T) {
	t.Run("nearest wins", func(t *testing.T) {
		f := newFixture(t)
		write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nmodel = \"root\"\n")
		write(t, filepath.Join(f.repo, "src", RepoFileName), "[plugins.atm-agent-mcp]\nmodel = \"src\"\n")
		if c := f.load(t, Flags{}); c.Model != "src" {
			t.Errorf("model %q, want the nearer file's", c.Model)
		}
	})
	t.Run("stops at the git root", func(t *testing.T) {
		f := newFixture(t)
		write(t, filepath.Join(filepath.Dir(f.repo), RepoFileName), "[plugins.atm-agent-mcp]\nmodel = \"outside\"\n")
		if c := f.load(t, Flags{}); c.Model != "" {
			t.Errorf("model %q: read a file above the git root", c.Model)
		}
	})
	t.Run("git file (worktree)", func(t *testing.T) {
		f := newFixture(t)
		os.Remove(filepath.Join(f.repo, ".git"))
		write(t, filepath.Join(f.repo, ".git"), "gitdir: /elsewhere\n")
		write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nmodel = \"root\"\n")
		if c := f.load(t, Flags{}); c.Model != "root" {
			t.Errorf("model %q, want the worktree root's", c.Model)
		}
	})
	t.Run("no search past a git ceiling", func(t *testing.T) {
		f := newFixture(t)
		// The work tree's root is the ceiling itself: git does not look
		// into it from below, so cwd is outside git.
		f.env[gitctx.CeilingEnv] = f.repo
		write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nmodel = \"root\"\n")
		if c := f.load(t, Flags{}); c.Model != "" {
			t.Errorf("model %q: searched into the ceiling", c.Model)
		}
		f.env[gitctx.CeilingEnv] = filepath.Dir(f.repo)
		if c := f.load(t, Flags{}); c.Model != "root" {
			t.Errorf("model %q, want the root's file below the ceiling", c.Model)
		}
	})
	t.Run("outside git only cwd", func(t *testing.T) {
		f := newFixture(t)
		os.Remove(filepath.Join(f.repo, ".git"))
		write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nmodel = \"root\"\n")
		if c := f.load(t, Flags{}); c.Model != "" {
			t.Errorf("model %q: searched parents outside a git tree", c.Model)
		}
		write(t, filepath.Join(f.cwd, RepoFileName), "[plugins.atm-agent-mcp]\nmodel = \"cwd\"\n")
		if c := f.load(t, Flags{}); c.Model != "cwd" {
			t.Errorf("model %q, want cwd's file", c.Model)
		}
	})
}

func TestFastAndModel(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		flags   Flags
		want    string // effective model
		wantErr string
	}{
		{name: "no model forwarded", want: ""},
		{name: "file pin", file: "model = \"o3\"\nfast_model = \"spark\"\n", want: "o3"},
		{name: "fast over file pin", file: "model = \"o3\"\nfast_model = \"spark\"\n", flags: Flags{Fast: ptr(true)}, want: "spark"},
		{name: "fast flag over env pin", file: "fast_model = \"spark\"\n", env: map[string]string{"ATM_AGENT_MCP_MODEL": "o3"}, flags: Flags{Fast: ptr(true)}, want: "spark"},
		{name: "model flag over fast env", file: "fast_model = \"spark\"\n", env: map[string]string{"ATM_AGENT_MCP_FAST": "1"}, flags: Flags{Model: ptr("o3")}, want: "o3"},
		{name: "fast=false", file: "model = \"o3\"\nfast_model = \"spark\"\n", flags: Flags{Fast: ptr(false)}, want: "o3"},
		{name: "model and fast flags", file: "fast_model = \"spark\"\n", flags: Flags{Fast: ptr(true), Model: ptr("o3")}, wantErr: "either fast or a model"},
		{name: "fast without fast_model", flags: Flags{Fast: ptr(true)}, wantErr: "fast_model to be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.repoFile(), "[plugins.atm-agent-mcp]\n"+tt.file)
			for k, v := range tt.env {
				f.env[k] = v
			}
			c, err := Load(f.opts(tt.flags))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.EffectiveModel(); got != tt.want {
				t.Errorf("EffectiveModel = %q, want %q", got, tt.want)
			}
			if tt.file != "" && strings.Contains(tt.file, "model = \"o3\"") && c.Model != "o3" {
				t.Errorf("--fast changed the model pin to %q", c.Model)
			}
		})
	}
}

func TestReadonly(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nsandbox = \"danger-full-access\"\n[plugins.atm-agent-mcp.roles.w]\nsandbox = \"workspace-write\"\n")
	c := f.load(t, Flags{Readonly: ptr(true), ReadonlyFlag: "--explore"})
	ts, err := c.ThreadDefaults("w")
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox != "read-only" || ts.Sandbox != "read-only" || c.Sources["sandbox"].Detail != "--explore" {
		t.Errorf("--explore: sandbox %q (%v), thread %q", c.Sandbox, c.Sources["sandbox"], ts.Sandbox)
	}
	if _, err := Load(f.opts(Flags{Readonly: ptr(true), Sandbox: ptr("workspace-write")})); err == nil || !strings.Contains(err.Error(), "--readonly") {
		t.Errorf("--readonly with --sandbox workspace-write: err = %v", err)
	}
	// A sandbox flag outranks ATM_AGENT_MCP_READONLY.
	f.env["ATM_AGENT_MCP_READONLY"] = "true"
	c = f.load(t, Flags{Sandbox: ptr("workspace-write")})
	if c.Readonly || c.Sandbox != "workspace-write" {
		t.Errorf("flag sandbox vs env readonly: readonly=%v sandbox=%q", c.Readonly, c.Sandbox)
	}
}

func TestThreadDefaults(t *testing.T) {
	f := newFixture(t)
	write(t, f.global(), `
[plugins.atm-agent-mcp]
model = "base-model"
reasoning_effort = "medium"
[plugins.atm-agent-mcp.roles.architect]
model = "o3"
reasoning_effort = "high"
sandbox = "read-only"
`)
	write(t, f.repoFile(), `
[plugins.atm-agent-mcp.roles.architect]
approval_policy = "never"
[plugins.atm-agent-mcp.roles.worker]
model = "gpt-5.3-codex"
`)
	c := f.load(t, Flags{})
	tests := []struct {
		role string
		want ThreadSettings
	}{
		{"", ThreadSettings{Model: "base-model", ReasoningEffort: "medium", Sandbox: "workspace-write", ApprovalPolicy: "on-request"}},
		// Fields merge across files: the repo adds approval_policy to the
		// global architect preset.
		{"architect", ThreadSettings{Role: "architect", Model: "o3", ReasoningEffort: "high", Sandbox: "read-only", ApprovalPolicy: "never"}},
		{"worker", ThreadSettings{Role: "worker", Model: "gpt-5.3-codex", ReasoningEffort: "medium", Sandbox: "workspace-write", ApprovalPolicy: "on-request"}},
	}
	for _, tt := range tests {
		got, err := c.ThreadDefaults(tt.role)
		if err != nil {
			t.Fatalf("%q: %v", tt.role, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("role %q (-want +got):\n%s", tt.role, diff)
		}
	}
	if got := (ThreadSettings{ReasoningEffort: "high"}).CodexConfig(); !cmp.Equal(got, map[string]any{"model_reasoning_effort": "high"}) {
		t.Errorf("CodexConfig = %v", got)
	}
	if _, err := c.ThreadDefaults("nope"); !errors.Is(err, ErrUnknownRole) || !strings.Contains(err.Error(), "architect, worker") {
		t.Errorf("unknown role: %v", err)
	}
	// --role selects the instance default; an env model beats the preset.
	f.env["ATM_AGENT_MCP_MODEL"] = "env-model"
	c = f.load(t, Flags{Role: ptr("architect")})
	got, err := c.ThreadDefaults("")
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != "architect" || got.Model != "env-model" || got.Sandbox != "read-only" {
		t.Errorf("--role architect with env model: %+v", got)
	}
	if _, err := Load(f.opts(Flags{Role: ptr("ghost")})); err == nil || !strings.Contains(err.Error(), `flag --role "ghost"`) {
		t.Errorf("--role ghost: %v", err)
	}
}

func TestBadValues(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"sandbox", "[plugins.atm-agent-mcp]\nsandbox = \"open\"\n",
			nil, []string{".atm.toml: plugins.atm-agent-mcp.sandbox = \"open\": expected one of read-only, workspace-write, danger-full-access"}},
		{"approval", "[plugins.atm-agent-mcp]\napproval_policy = \"always\"\n",
			nil, []string{"plugins.atm-agent-mcp.approval_policy", "untrusted, on-failure, on-request, never"}},
		{"backend", "[plugins.atm-agent-mcp]\nbackend = \"exec\"\n", nil, []string{"plugins.atm-agent-mcp.backend", "auto, mcp-server, app-server"}},
		{"negative", "[plugins.atm-agent-mcp]\nmax_concurrent_threads = -1\n", nil, []string{"max_concurrent_threads = -1: expected a positive integer"}},
		{"zero timeout", "[plugins.atm-agent-mcp]\nrequest_timeout_secs = 0\n", nil, []string{"request_timeout_secs = 0: expected a positive number of seconds"}},
		{"string for int", "[plugins.atm-agent-mcp]\nmax_mail_messages = \"ten\"\n", nil, []string{"max_mail_messages = \"ten\": expected a positive integer"}},
		{"string for bool", "[plugins.atm-agent-mcp]\nauto_mail = \"no\"\n", nil, []string{"auto_mail = \"no\": expected true or false"}},
		{"role field", "[plugins.atm-agent-mcp.roles.w]\nsandbox = \"x\"\n", nil, []string{"plugins.atm-agent-mcp.roles.w.sandbox = \"x\""}},
		{"role not a table", "[plugins.atm-agent-mcp.roles]\nw = 1\n", nil, []string{"plugins.atm-agent-mcp.roles.w = 1: expected a table"}},
		{"plugin not a table", "plugins = 3\n", nil, []string{"plugins = 3: expected a table"}},
		{"bad identity", "[core]\nidentity = \"../evil\"\n", nil, []string{"core.identity = \"../evil\": expected a name"}},
		{"env", "", map[string]string{"ATM_AGENT_MCP_MAIL_POLL_INTERVAL_MS": "soon"}, []string{`environment ATM_AGENT_MCP_MAIL_POLL_INTERVAL_MS="soon": expected a positive integer`}},
		{"per-thread env", "", map[string]string{"ATM_AGENT_MCP_PER_THREAD_AUTO_MAIL": "a:true"}, []string{"identity=true|false pairs"}},
		{"two at once", "[plugins.atm-agent-mcp]\nsandbox = \"x\"\nbackend = \"y\"\n", nil, []string{"sandbox", "backend"}},
		{"malformed", "[plugins.atm-agent-mcp]\nmodel = \n", nil, []string{".atm.toml:2: ", "malformed configuration file"}},
		{"price without output", "[plugins.atm-agent-mcp.prices.m]\ninput = 1\n", nil, []string{"plugins.atm-agent-mcp.prices.m.output = nothing: expected the price of output tokens per million (a number): a price is never guessed"}},
		{"negative price", "[plugins.atm-agent-mcp.prices.m]\ninput = -1\noutput = 2\n", nil, []string{"prices.m.input = -1: expected a number of 0 or more (per million tokens)"}},
		{"price not a table", "[plugins.atm-agent-mcp.prices]\nm = 2\n", nil, []string{"expected a table of input, cached_input, output (per million tokens) and currency"}},
		{"dotted model's price not a table", "[plugins.atm-agent-mcp.prices]\n\"gpt-5.1\" = 2\n", nil, []string{`plugins.atm-agent-mcp.prices."gpt-5.1" = 2: expected a table of input`}},
		{"prices not a table", "[plugins.atm-agent-mcp]\nprices = 1\n", nil, []string{"plugins.atm-agent-mcp.prices = 1: expected a table of model prices ([plugins.atm-agent-mcp.prices.<model>])"}},
		{"roles not a table", "[plugins.atm-agent-mcp]\nroles = 1\n", nil, []string{"plugins.atm-agent-mcp.roles = 1: expected a table of role presets ([plugins.atm-agent-mcp.roles.<name>])"}},
		{"hosts not a table", "[plugins.atm-agent-mcp]\nhosts = 1\n", nil, []string{"plugins.atm-agent-mcp.hosts = 1: expected a table of hosts ([plugins.atm-agent-mcp.hosts.<name>])"}},
		{"host named local", "[plugins.atm-agent-mcp.hosts.local]\nssh = \"box\"\n", nil, []string{`plugins.atm-agent-mcp.hosts.local = a table: expected a name other than local: "local" is this machine`}},
		{"host not a table", "[plugins.atm-agent-mcp.hosts]\nbox = 1\n", nil, []string{"plugins.atm-agent-mcp.hosts.box = 1: expected a table of ssh, ssh_args, root, codex_bin, agents"}},
		{"host without ssh", "[plugins.atm-agent-mcp.hosts.box]\nroot = \"/srv\"\n", nil, []string{"plugins.atm-agent-mcp.hosts.box.ssh = (missing): expected the host's ssh destination"}},
		{"budget", "[plugins.atm-agent-mcp]\nbudget_tokens = -5\n", nil, []string{"budget_tokens = -5: expected an integer of 0 or more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.repoFile(), tt.file)
			for k, v := range tt.env {
				f.env[k] = v
			}
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
	t.Run("flag", func(t *testing.T) {
		f := newFixture(t)
		_, err := Load(f.opts(Flags{Sandbox: ptr("open")}))
		var ce *Error
		if !errors.As(err, &ce) || ce.Source.Kind != SourceFlag || !errors.Is(err, ErrInvalidValue) {
			t.Fatalf("err = %#v", err)
		}
		if want := `flag --sandbox "open": expected one of`; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	})
	t.Run("missing --config file", func(t *testing.T) {
		f := newFixture(t)
		_, err := Load(f.opts(Flags{Config: ptr("nope.toml")}))
		if !errors.Is(err, ErrFileNotFound) || errors.Is(err, ErrMalformedFile) || !strings.Contains(err.Error(), "configuration file not found: "+filepath.Join(f.cwd, "nope.toml")) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("prompt file checked", func(t *testing.T) {
		f := newFixture(t)
		write(t, f.repoFile(), "[plugins.atm-agent-mcp]\nbase_prompt_file = \"missing.md\"\n")
		if _, err := Load(f.opts(Flags{})); err != nil {
			t.Errorf("without CheckFiles: %v", err)
		}
		o := f.opts(Flags{})
		o.CheckFiles = true
		_, err := Load(o)
		if err == nil || !strings.Contains(err.Error(), "plugins.atm-agent-mcp.base_prompt_file") || !strings.Contains(err.Error(), "a readable file") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestWarnings(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), `
[core]
default_team = "t"
colour = "blue" # ATM's business, not ours

[plugins.atm-agent-mcp]
modle = "o3"
frobnicate = 1

[plugins.atm-agent-mcp.roles.w]
sandbx = "read-only"

[plugins.atm-agent-mcp.prices."gpt-5"]
input = 1
output = 2
cache_input = 0.1

[plugins.other]
anything = true

[aliases]
x = "y"
`)
	c := f.load(t, Flags{})
	want := []Warning{
		{File: f.repoFile(), Key: "plugins.atm-agent-mcp.frobnicate", Message: "unknown key, ignored"},
		{File: f.repoFile(), Key: "plugins.atm-agent-mcp.modle", Message: "unknown key, ignored (did you mean model?)"},
		{File: f.repoFile(), Key: "plugins.atm-agent-mcp.roles.w.sandbx", Message: "unknown role key, ignored (did you mean sandbox?)"},
		{File: f.repoFile(), Key: `plugins.atm-agent-mcp.prices."gpt-5".cache_input`, Message: "unknown price key, ignored (did you mean cached_input?)"},
	}
	if diff := cmp.Diff(want, c.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	write(t, f.repoFile(), "[plugins.atm-agent-mcp]\napproval_policy = \"on-failure\"\n")
	c = f.load(t, Flags{})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0].Message, "0.104") {
		t.Errorf("on-failure warnings: %v", c.Warnings)
	}
}

func TestHome(t *testing.T) {
	f := newFixture(t)
	other := t.TempDir()
	write(t, GlobalFile(other), "[plugins.atm-agent-mcp]\nmodel = \"home-model\"\n")
	f.env["ATM_HOME"] = "  " // blank: HOME is used
	f.env["HOME"] = other
	c := f.load(t, Flags{})
	if c.Home != other || c.Sources["home"].Detail != "HOME" || c.Model != "home-model" {
		t.Errorf("home %q (%v), model %q", c.Home, c.Sources["home"], c.Model)
	}
}

func TestSourceString(t *testing.T) {
	for _, tt := range []struct {
		s    Source
		want string
	}{
		{Source{Kind: SourceFlag, Detail: "--model"}, "flag --model"},
		{Source{Kind: SourceEnv, Detail: "ATM_TEAM"}, "env ATM_TEAM"},
		{Source{Kind: SourceFile, Detail: "/x/.atm.toml", Key: "core.default_team"}, "file /x/.atm.toml (core.default_team)"},
		{Source{Kind: SourceDefault}, "default"},
		{Source{Kind: SourceDefault, Detail: "same as identity"}, "default (same as identity)"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%#v: %q, want %q", tt.s, got, tt.want)
		}
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte("[core]\nidentity = \"x\"\n[plugins.atm-agent-mcp]\nmodel = \"o3\"\n[plugins.atm-agent-mcp.roles.a]\nsandbox = \"read-only\"\n"))
	f.Add([]byte("plugins = 1"))
	f.Add([]byte("[plugins.atm-agent-mcp]\nroles = [1, 2]\nper_thread_auto_mail = {a = true}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, ".git"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, RepoFileName), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(LoadOptions{Cwd: dir, Home: dir, Env: func(string) (string, bool) { return "", false }})
		if err == nil {
			c.Entries()
			if _, err := c.ThreadDefaults(""); err != nil {
				t.Errorf("ThreadDefaults after a successful Load: %v", err)
			}
		}
	})
}
