package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
)

// Flags are the command-line values that were given. A nil field was not
// given; a non-nil one was, even if it holds the zero value.
type Flags struct {
	Config         *string // --config FILE
	Team           *string // --team
	Identity       *string // --identity
	Role           *string // --role
	Model          *string // --model
	Fast           *bool   // --fast
	Subagents      *bool   // --subagents
	Readonly       *bool   // --readonly or --explore
	Sandbox        *string // --sandbox
	ApprovalPolicy *string // --approval-policy
	Backend        *string // --backend
	CodexBin       *string // --codex-bin
	Timeout        *string // --timeout: seconds, or a duration such as 5m
	LogLevel       *string // --log-level
	LogFile        *string // --log-file
	// Resume is --resume; "" resumes the most recent session of the
	// instance identity, anything else names an agent_id or identity.
	Resume *string
	// LeadPush is --lead-push or --no-lead-push.
	LeadPush *bool
	// ReadonlyFlag names the flag that set Readonly in sources
	// ("--explore"); optional: "" means "--readonly".
	ReadonlyFlag string
}

// LoadOptions are the inputs of [Load]. Every field is optional.
type LoadOptions struct {
	Flags Flags
	// Env looks up an environment variable; an empty or blank value counts
	// as unset. Optional: nil means os.LookupEnv.
	Env func(string) (string, bool)
	// Cwd is the working directory, where the search for .atm.toml starts
	// and relative flag paths are based. Optional: "" means os.Getwd.
	Cwd string
	// Home overrides the ATM home. Optional: "" means ATM_HOME, else HOME,
	// else the user's home directory.
	Home string
	// CheckFiles makes Load verify that the prompt files are readable
	// regular files and that the log file's directory exists. `serve` sets
	// it; commands that only read the registry do not.
	CheckFiles bool
}

// pluginKeys are the keys of [plugins.atm-agent-mcp]; any other key draws
// a warning.
var pluginKeys = []string{
	"identity", "default_identity", "codex_bin", "backend",
	"model", "fast_model", "reasoning_effort", "sandbox", "approval_policy",
	"subagents", "base_prompt_file", "extra_instructions_file",
	"mail_poll_interval_ms", "idle_timeout_ms", "persist_threads",
	"request_timeout_secs", "progress_interval_ms", "max_concurrent_threads",
	"auto_mail", "per_thread_auto_mail", "max_mail_messages", "max_mail_message_length",
	"elicitation_timeout_secs", "handshake_timeout_secs", "codex_restart", "approval_fallback", "mcp_protocol", "log_level", "log_file",
	"max_result_chars", "event_buffer_size", "lead_push",
	"isolation", "worktree_base", "worktree_setup", "worktree_ports", "merge_check",
	"roles", "agents", "host", "hosts",
	"budget_tokens", "team_budget_tokens", "budget_interrupt", "prices", "busy_mail", "sub_agent_wait_secs",
}

// roleKeys are the keys of a role preset.
var roleKeys = []string{"model", "reasoning_effort", "sandbox", "approval_policy", "isolation", "host", "budget_tokens", "busy_mail"}

// Load resolves the configuration as the package documentation describes.
// It fails on a malformed or unreadable file and on any bad value, naming
// the file and key (or variable, or flag) and the expected form; all bad
// values are reported together. Unknown keys become Config.Warnings.
func Load(opts LoadOptions) (*Config, error) {
	env := opts.Env
	if env == nil {
		env = os.LookupEnv
	}
	lookupEnv := func(k string) (string, bool) {
		v, ok := env(k)
		if !ok || strings.TrimSpace(v) == "" {
			return "", false
		}
		return v, true
	}
	cwd := opts.Cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("load config: %w", err)
		}
		cwd = wd
	}
	cwd = filepath.Clean(cwd)
	cfg := &Config{Sources: make(map[string]Source)}
	userHome, _ := lookupEnv("HOME")
	if userHome == "" {
		userHome, _ = os.UserHomeDir()
	}

	// ATM home.
	switch {
	case opts.Home != "":
		cfg.Home, cfg.Sources["home"] = opts.Home, Source{Kind: SourceDefault, Detail: "set by the caller"}
	default:
		if h, ok := lookupEnv("ATM_HOME"); ok {
			cfg.Home, cfg.Sources["home"] = strings.TrimSpace(h), Source{Kind: SourceEnv, Detail: "ATM_HOME"}
		} else if userHome != "" {
			cfg.Home, cfg.Sources["home"] = userHome, Source{Kind: SourceEnv, Detail: "HOME"}
		} else {
			return nil, errors.New("load config: no ATM home: set ATM_HOME or HOME")
		}
	}
	cfg.Home = filepath.Clean(cfg.Home)

	r := &resolver{
		flags:    flagMap(opts.Flags),
		env:      lookupEnv,
		cwd:      cwd,
		userHome: userHome,
		sources:  cfg.Sources,
	}

	// Files, highest layer first.
	cfg.ConfigFile = r.path("config", []lookup{flagL("--config"), envL("ATM_CONFIG")})
	var paths []string
	if cfg.ConfigFile != "" {
		paths = append(paths, cfg.ConfigFile)
	}
	ceilings, _ := env(gitctx.CeilingEnv)
	if p, ok := findRepoFile(cwd, gitctx.Ceilings(ceilings)); ok {
		paths = append(paths, p)
	}
	paths = append(paths, GlobalFile(cfg.Home))
	var ferrs []error
	for i, p := range paths {
		if slices.ContainsFunc(paths[:i], func(q string) bool { return sameFile(p, q) }) {
			continue
		}
		f, err := readFile(p, p == cfg.ConfigFile)
		if err != nil {
			ferrs = append(ferrs, err)
			continue
		}
		if f == nil {
			continue
		}
		r.files = append(r.files, f)
		cfg.Files = append(cfg.Files, p)
		cfg.Warnings = append(cfg.Warnings, f.misspelt...)
		cfg.Warnings = append(cfg.Warnings, unknownKeys(f)...)
		cfg.Warnings = append(cfg.Warnings, agentTable.unknownKeys(f, "agent")...)
		cfg.Warnings = append(cfg.Warnings, hostTable.unknownKeys(f, "host")...)
	}
	if err := errors.Join(ferrs...); err != nil {
		return nil, err
	}

	r.resolveAll(cfg, opts)
	if err := errors.Join(r.errs...); err != nil {
		return nil, err
	}
	if opts.CheckFiles {
		if err := cfg.checkFiles(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// resolveAll resolves every key into cfg and checks the keys against each
// other.
func (r *resolver) resolveAll(cfg *Config, opts LoadOptions) {
	cfg.Team = r.name("team", DefaultTeam, []lookup{flagL("--team"), envL("ATM_TEAM"), coreL("default_team")})
	cfg.Identity = r.name("identity", DefaultIdentity, []lookup{
		flagL("--identity"), envL(envName("identity")), pluginL("identity"),
		envL("ATM_IDENTITY"), coreL("identity"),
	})
	// The agents' default identity is a setting of its own: naming this
	// serve's identity (a second window's ATM_AGENT_MCP_IDENTITY) does not
	// make the lead's mail theirs.
	cfg.DefaultIdentity = r.name("default_identity", DefaultSessionIdentity, std("default_identity", ""))
	cfg.CodexBin = r.program("codex_bin", DefaultCodexBin, std("codex_bin", "--codex-bin"))
	cfg.Backend = r.enum("backend", DefaultBackend, Backends, std("backend", "--backend"))

	cfg.Model = r.str("model", "", std("model", "--model"))
	cfg.FastModel = r.str("fast_model", "", std("fast_model", ""))
	cfg.Fast = r.boolean("fast", false, []lookup{flagL("--fast"), envL(envName("fast"))})
	cfg.ReasoningEffort = r.enum("reasoning_effort", "", ReasoningEfforts, std("reasoning_effort", ""))
	cfg.Sandbox = r.enum("sandbox", DefaultSandbox, Sandboxes, std("sandbox", "--sandbox"))
	cfg.ApprovalPolicy = r.enum("approval_policy", DefaultApprovalPolicy, ApprovalPolicies, std("approval_policy", "--approval-policy"))
	roFlag := opts.Flags.ReadonlyFlag
	if roFlag == "" {
		roFlag = "--readonly"
	}
	cfg.Readonly = r.boolean("readonly", false, []lookup{flagL(roFlag), envL(envName("readonly"))})
	if _, _, ok := r.find(std("subagents", "--subagents")); ok {
		b := r.boolean("subagents", false, std("subagents", "--subagents"))
		cfg.Subagents = &b
	} else {
		cfg.Sources["subagents"] = Source{Kind: SourceDefault, Detail: "Codex's own default"}
	}
	cfg.Role = r.str("role", "", []lookup{flagL("--role"), envL(envName("role"))})
	if v, ok := r.flags["--resume"]; ok {
		cfg.Resume = Resume{Enabled: true, Target: v.(string)}
		cfg.Sources["resume"] = Source{Kind: SourceFlag, Detail: "--resume"}
	} else {
		cfg.Sources["resume"] = Source{Kind: SourceDefault}
	}

	cfg.BasePromptFile = r.path("base_prompt_file", std("base_prompt_file", ""))
	if cfg.BasePromptFile == "" {
		cfg.Sources["base_prompt_file"] = Source{Kind: r.sources["base_prompt_file"].Kind, Detail: "Codex's own base instructions"}
	}
	cfg.ExtraInstructionsFile = r.path("extra_instructions_file", std("extra_instructions_file", ""))
	if cfg.ExtraInstructionsFile == "" {
		cfg.Sources["extra_instructions_file"] = Source{Kind: r.sources["extra_instructions_file"].Kind, Detail: "bundled prompt"}
	}

	cfg.MailPollInterval = r.millis("mail_poll_interval_ms", DefaultMailPollInterval, 1, std("mail_poll_interval_ms", ""))
	cfg.IdleTimeout = r.millis("idle_timeout_ms", DefaultIdleTimeout, 0, std("idle_timeout_ms", ""))
	cfg.PersistThreads = r.boolean("persist_threads", true, std("persist_threads", ""))
	cfg.RequestTimeout = r.seconds("request_timeout_secs", DefaultRequestTimeout, std("request_timeout_secs", "--timeout"))
	cfg.ProgressInterval = r.millis("progress_interval_ms", DefaultProgressInterval, 0, std("progress_interval_ms", ""))
	cfg.MaxConcurrentThreads = r.integer("max_concurrent_threads", DefaultMaxConcurrentThreads, 1, std("max_concurrent_threads", ""))
	cfg.Isolation = r.enum("isolation", DefaultIsolation, Isolations, std("isolation", ""))
	cfg.WorktreeBase = r.str("worktree_base", "", std("worktree_base", ""))
	cfg.WorktreeSetup = r.str("worktree_setup", "", std("worktree_setup", ""))
	cfg.WorktreePorts = r.integer("worktree_ports", DefaultWorktreePorts, 0, std("worktree_ports", ""))
	cfg.MergeCheck = r.str("merge_check", "", std("merge_check", ""))
	cfg.AutoMail = r.boolean("auto_mail", true, std("auto_mail", ""))
	cfg.BusyMail = r.enum("busy_mail", "", BusyMails, std("busy_mail", ""))
	cfg.SubAgentWait = r.seconds("sub_agent_wait_secs", DefaultSubAgentWait, std("sub_agent_wait_secs", ""))
	cfg.PerThreadAutoMail = r.perThreadAutoMail()
	cfg.MaxMailMessages = r.integer("max_mail_messages", DefaultMaxMailMessages, 1, std("max_mail_messages", ""))
	cfg.MaxMailMessageLength = r.integer("max_mail_message_length", DefaultMaxMailMessageLength, 1, std("max_mail_message_length", ""))
	cfg.ElicitationTimeout = r.seconds("elicitation_timeout_secs", DefaultElicitationTimeout, std("elicitation_timeout_secs", ""))
	cfg.ApprovalFallback = r.enum("approval_fallback", DefaultApprovalFallback, ApprovalFallbacks, std("approval_fallback", ""))
	cfg.HandshakeTimeout = r.seconds("handshake_timeout_secs", DefaultHandshakeTimeout, std("handshake_timeout_secs", ""))
	cfg.CodexRestart = r.enum("codex_restart", DefaultCodexRestart, CodexRestarts, std("codex_restart", ""))
	cfg.MCPProtocol = r.enum("mcp_protocol", DefaultMCPProtocol, MCPProtocols, std("mcp_protocol", ""))
	cfg.MaxResultChars = r.integer("max_result_chars", DefaultMaxResultChars, 100, std("max_result_chars", ""))
	cfg.EventBufferSize = r.integer("event_buffer_size", DefaultEventBufferSize, 1, std("event_buffer_size", ""))
	cfg.LeadPush = r.boolean("lead_push", true, std("lead_push", "--lead-push"))
	cfg.MessagingSocket = r.str("messaging_socket", "", []lookup{envL(EnvMessagingSocket)})
	cfg.MessagingToken, _ = r.env(EnvMessagingToken)
	cfg.LogLevel = r.enum("log_level", DefaultLogLevel, LogLevels, std("log_level", "--log-level"))
	cfg.LogFile = r.path("log_file", std("log_file", "--log-file"))
	cfg.Roles = r.roles()
	r.resolveBudgets(cfg)
	cfg.Agents = r.agents()
	cfg.Host = r.str("host", "", std("host", ""))
	cfg.Hosts = r.hosts(cfg)
	r.checkHostRefs(cfg)
	cfg.Warnings = append(cfg.Warnings, r.warnings...)
	r.resolveSession(cfg)

	r.crossCheck(cfg)
}

// crossCheck checks keys that depend on each other.
func (r *resolver) crossCheck(cfg *Config) {
	src := cfg.Sources
	// --fast and the model.
	if cfg.Fast && src["model"].Kind != SourceDefault && src["fast"].Kind == src["model"].Kind {
		r.errs = append(r.errs, &Error{
			Key: "fast", Source: src["fast"], Value: "true",
			Expected: fmt.Sprintf("either fast or a model, not both (model %q is set by %s)", cfg.Model, src["model"]),
		})
	} else if cfg.fastWins() && cfg.FastModel == "" {
		r.errs = append(r.errs, &Error{
			Key: "fast", Source: src["fast"], Value: "true",
			Expected: "fast_model to be set ([plugins.atm-agent-mcp] fast_model or ATM_AGENT_MCP_FAST_MODEL)",
		})
	}
	// --readonly and the sandbox.
	if cfg.Readonly {
		ro, sb := src["readonly"], src["sandbox"]
		switch {
		case sb.Kind.rank() > ro.Kind.rank():
			cfg.Readonly = false // an explicit higher-layer sandbox wins
		case sb.Kind == ro.Kind && cfg.Sandbox != "read-only":
			r.errs = append(r.errs, &Error{
				Key: "readonly", Source: ro, Value: "true",
				Expected: fmt.Sprintf("no other sandbox in the same layer (sandbox %q is set by %s)", cfg.Sandbox, sb),
			})
		default:
			cfg.Sandbox = "read-only"
			src["sandbox"] = ro
		}
	}
	// The default role must exist.
	if cfg.Role != "" {
		if _, ok := cfg.Roles[cfg.Role]; !ok {
			names := slices.Sorted(maps.Keys(cfg.Roles))
			exp := "a role defined in [plugins.atm-agent-mcp.roles.<name>] (none are defined)"
			if len(names) > 0 {
				exp = "one of the defined roles: " + strings.Join(names, ", ")
			}
			r.errs = append(r.errs, &Error{Key: "role", Source: src["role"], Value: fmt.Sprintf("%q", cfg.Role), Expected: exp})
		}
	}
	if cfg.ApprovalPolicy == "on-failure" {
		s := src["approval_policy"]
		cfg.Warnings = append(cfg.Warnings, Warning{
			File: s.String(), Key: "approval_policy",
			Message: "on-failure is accepted only by Codex 0.104 and older; Codex 0.153.4 takes on-request or never",
		})
	}
}

// roles resolves the role presets, merging each field across files.
func (r *resolver) roles() map[string]Role {
	names := r.sections(namedTable{table: "roles", keys: roleKeys, holds: "role presets"})
	roles := make(map[string]Role, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		key := func(k string) string { return "roles." + name + "." + k }
		at := func(k string) []lookup { return []lookup{pluginL("roles", name, k)} }
		roles[name] = Role{
			Model:           r.str(key("model"), "", at("model")),
			ReasoningEffort: r.enum(key("reasoning_effort"), "", ReasoningEfforts, at("reasoning_effort")),
			Sandbox:         r.enum(key("sandbox"), "", Sandboxes, at("sandbox")),
			ApprovalPolicy:  r.enum(key("approval_policy"), "", ApprovalPolicies, at("approval_policy")),
			Isolation:       r.enum(key("isolation"), "", Isolations, at("isolation")),
			Host:            r.str(key("host"), "", at("host")),
			BusyMail:        r.enum(key("busy_mail"), "", BusyMails, at("busy_mail")),
			BudgetTokens:    r.roleBudget(name),
		}
		for _, k := range roleKeys {
			if r.sources[key(k)].Kind == SourceDefault {
				delete(r.sources, key(k))
			}
		}
	}
	return roles
}

// perThreadAutoMail merges per_thread_auto_mail: file tables entry by entry
// (higher files win), then ATM_AGENT_MCP_PER_THREAD_AUTO_MAIL
// ("identity=bool,identity=bool") over them.
func (r *resolver) perThreadAutoMail() map[string]bool {
	out := map[string]bool{}
	const key = "per_thread_auto_mail"
	for i := len(r.files) - 1; i >= 0; i-- {
		f := r.files[i]
		v, ok := f.get(pluginL(key))
		if !ok {
			continue
		}
		src := Source{Kind: SourceFile, Detail: f.path, Key: pluginKeyPrefix + key}
		t, ok := v.(map[string]any)
		if !ok {
			r.errs = append(r.errs, &Error{Key: key, Source: src, Value: tomlText(v), Expected: "a table of identity = true|false"})
			continue
		}
		for id, bv := range t {
			s := src
			s.Key += "." + id
			b, ok := bv.(bool)
			if !ok || nameDec.ok(id) != nil {
				r.errs = append(r.errs, &Error{Key: key + "." + id, Source: s, Value: tomlText(bv), Expected: "identity = true or false"})
				continue
			}
			out[id] = b
			r.sources[key+"."+id] = s
		}
	}
	if v, ok := r.env(envName(key)); ok {
		src := Source{Kind: SourceEnv, Detail: envName(key)}
		for item := range strings.SplitSeq(v, ",") {
			id, val, found := strings.Cut(strings.TrimSpace(item), "=")
			b, err := parseBool(val)
			if !found || err != nil || nameDec.ok(id) != nil {
				r.errs = append(r.errs, &Error{Key: key, Source: src, Value: fmt.Sprintf("%q", v), Expected: "identity=true|false pairs separated by commas"})
				break
			}
			out[id] = b
			r.sources[key+"."+id] = src
		}
	}
	if len(out) == 0 {
		r.sources[key] = Source{Kind: SourceDefault}
		return nil
	}
	return out
}

// ok runs the decoder on a string and returns an error when it does not fit.
func (d decoder) ok(s string) error {
	if _, ok := d.decode(s, Source{}); !ok {
		return fmt.Errorf("expected %s", d.expected)
	}
	return nil
}

// flagMap turns the given flags into raw values by flag name.
func flagMap(f Flags) map[string]any {
	m := map[string]any{}
	str := func(name string, p *string) {
		if p != nil {
			m[name] = *p
		}
	}
	boolean := func(name string, p *bool) {
		if p != nil {
			m[name] = *p
		}
	}
	str("--config", f.Config)
	str("--team", f.Team)
	str("--identity", f.Identity)
	str("--role", f.Role)
	str("--model", f.Model)
	boolean("--fast", f.Fast)
	boolean("--subagents", f.Subagents)
	ro := f.ReadonlyFlag
	if ro == "" {
		ro = "--readonly"
	}
	boolean(ro, f.Readonly)
	str("--sandbox", f.Sandbox)
	str("--approval-policy", f.ApprovalPolicy)
	str("--backend", f.Backend)
	str("--codex-bin", f.CodexBin)
	str("--timeout", f.Timeout)
	str("--log-level", f.LogLevel)
	str("--log-file", f.LogFile)
	str("--resume", f.Resume)
	boolean("--lead-push", f.LeadPush)
	return m
}

// unknownKeys warns about the keys of our section that nothing reads.
func unknownKeys(f *fileLayer) []Warning {
	var ws []Warning
	for _, k := range slices.Sorted(maps.Keys(f.plugin)) {
		if !slices.Contains(pluginKeys, k) {
			ws = append(ws, Warning{File: f.path, Key: pluginKeyPrefix + k, Message: "unknown key, ignored" + suggest(k, pluginKeys)})
		}
	}
	roles, _ := f.plugin["roles"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(roles)) {
		t, _ := roles[name].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if !slices.Contains(roleKeys, k) {
				ws = append(ws, Warning{File: f.path, Key: pluginKeyPrefix + "roles." + name + "." + k, Message: "unknown role key, ignored" + suggest(k, roleKeys)})
			}
		}
	}
	return append(ws, priceWarnings(f)...)
}

// suggest returns " (did you mean X?)" for the known key closest to k, if
// it is close.
func suggest(k string, known []string) string {
	best := closest(k, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// closest returns the name in known closest to k when it is within two
// edits (ignoring case), else "".
func closest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// sameFile reports whether a and b name the same file.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// checkFiles verifies the files serve will need.
func (c *Config) checkFiles() error {
	var errs []error
	for _, k := range []struct {
		key  string
		path string
	}{{"base_prompt_file", c.BasePromptFile}, {"extra_instructions_file", c.ExtraInstructionsFile}} {
		if k.path == "" {
			continue
		}
		f, err := os.Open(k.path)
		if err == nil {
			var fi fs.FileInfo
			fi, err = f.Stat()
			f.Close()
			if err == nil && !fi.Mode().IsRegular() {
				err = errors.New("not a regular file")
			}
		}
		if err != nil {
			errs = append(errs, &Error{Key: k.key, Source: c.Sources[k.key], Value: fmt.Sprintf("%q", k.path),
				Expected: fmt.Sprintf("a readable file (%v)", unwrapPathError(err))})
		}
	}
	if c.LogFile != "" {
		if fi, err := os.Stat(filepath.Dir(c.LogFile)); err != nil || !fi.IsDir() {
			errs = append(errs, &Error{Key: "log_file", Source: c.Sources["log_file"], Value: fmt.Sprintf("%q", c.LogFile),
				Expected: "a file in an existing directory"})
		}
	}
	return errors.Join(errs...)
}

// unwrapPathError drops the path from a *fs.PathError: the message already
// names it.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
