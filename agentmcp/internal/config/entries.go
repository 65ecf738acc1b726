package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Entry is one resolved value for display by `atm-agent-mcp config`.
type Entry struct {
	Key string `json:"key"`
	// Value is a string, bool, int, a list of strings (an agent's args),
	// or nil for "none". Durations are given in the unit their key names
	// (milliseconds or seconds).
	Value  any    `json:"value"`
	Source Source `json:"source"`
}

// Entries returns every resolved value with its source, in a fixed order:
// where state lives, who the proxy is, how Codex runs, mail, approvals,
// logging, then role presets, per-identity auto-mail switches, the
// agent kinds (see agentEntries) and the hosts (see hostEntries).
// effective_model is the model a session without a role gets (see
// EffectiveModel).
func (c *Config) Entries() []Entry {
	none := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	ms := func(d time.Duration) any { return int(d / time.Millisecond) }
	secs := func(d time.Duration) any { return int(d / time.Second) }
	var sub any
	if c.Subagents != nil {
		sub = *c.Subagents
	}
	var resume any
	if c.Resume.Enabled {
		resume = c.Resume.Target
		if c.Resume.Target == "" {
			resume = "(most recent session of " + c.Identity + ")"
		}
	}
	regTeam, regInstance := c.RegistryTeam()
	registryKey := regTeam + "/" + regInstance
	es := []Entry{
		{Key: "home", Value: c.Home},
		{Key: "config", Value: none(c.ConfigFile)},
		{Key: "team", Value: c.Team},
		{Key: "registry", Value: registryKey, Source: c.Sources["team"]},
		{Key: "identity", Value: c.Identity},
		{Key: "default_identity", Value: c.DefaultIdentity},
		{Key: "codex_bin", Value: c.CodexBin},
		{Key: "backend", Value: c.Backend},
		{Key: "host", Value: none(c.Host)},
		{Key: "model", Value: none(c.Model)},
		{Key: "fast_model", Value: none(c.FastModel)},
		{Key: "fast", Value: c.Fast},
		{Key: "effective_model", Value: none(c.EffectiveModel()), Source: c.modelSource()},
		{Key: "reasoning_effort", Value: none(c.ReasoningEffort)},
		{Key: "sandbox", Value: c.Sandbox},
		{Key: "approval_policy", Value: c.ApprovalPolicy},
		{Key: "readonly", Value: c.Readonly},
		{Key: "subagents", Value: sub},
		{Key: "role", Value: none(c.Role)},
		{Key: "resume", Value: resume},
		{Key: "base_prompt_file", Value: none(c.BasePromptFile)},
		{Key: "extra_instructions_file", Value: none(c.ExtraInstructionsFile)},
		{Key: "mail_poll_interval_ms", Value: ms(c.MailPollInterval)},
		{Key: "idle_timeout_ms", Value: ms(c.IdleTimeout)},
		{Key: "persist_threads", Value: c.PersistThreads},
		{Key: "request_timeout_secs", Value: secs(c.RequestTimeout)},
		{Key: "progress_interval_ms", Value: ms(c.ProgressInterval)},
		{Key: "max_concurrent_threads", Value: c.MaxConcurrentThreads},
		{Key: "isolation", Value: c.Isolation},
		{Key: "worktree_base", Value: none(c.WorktreeBase)},
		{Key: "worktree_setup", Value: none(c.WorktreeSetup)},
		{Key: "worktree_ports", Value: c.WorktreePorts},
		{Key: "merge_check", Value: none(c.MergeCheck)},
		{Key: "auto_mail", Value: c.AutoMail},
		{Key: "busy_mail", Value: none(c.BusyMail)},
		{Key: "sub_agent_wait_secs", Value: secs(c.SubAgentWait)},
		{Key: "max_mail_messages", Value: c.MaxMailMessages},
		{Key: "max_mail_message_length", Value: c.MaxMailMessageLength},
		{Key: "elicitation_timeout_secs", Value: secs(c.ElicitationTimeout)},
		{Key: "handshake_timeout_secs", Value: secs(c.HandshakeTimeout)},
		{Key: "codex_restart", Value: c.CodexRestart},
		{Key: "approval_fallback", Value: c.ApprovalFallback},
		{Key: "mcp_protocol", Value: c.MCPProtocol},
		{Key: "max_result_chars", Value: c.MaxResultChars},
		{Key: "event_buffer_size", Value: c.EventBufferSize},
		{Key: "lead_push", Value: c.LeadPush},
		{Key: "messaging_socket", Value: none(c.MessagingSocket)},
		{Key: "log_level", Value: c.LogLevel},
		{Key: "log_file", Value: none(c.LogFile)},
	}
	for i := range es {
		if es[i].Source.Kind == "" {
			es[i].Source = c.Sources[es[i].Key]
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.PerThreadAutoMail)) {
		k := "per_thread_auto_mail." + id
		es = append(es, Entry{Key: k, Value: c.PerThreadAutoMail[id], Source: c.Sources[k]})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		r := c.Roles[name]
		for _, f := range []struct{ k, v string }{
			{"model", r.Model}, {"reasoning_effort", r.ReasoningEffort},
			{"sandbox", r.Sandbox}, {"approval_policy", r.ApprovalPolicy}, {"isolation", r.Isolation},
			{"host", r.Host}, {"busy_mail", r.BusyMail},
		} {
			if f.v == "" {
				continue
			}
			k := "roles." + name + "." + f.k
			es = append(es, Entry{Key: k, Value: f.v, Source: c.Sources[k]})
		}
	}
	return append(append(append(es, c.budgetEntries()...), c.agentEntries()...), c.hostEntries()...)
}

// agentEntries are the agents' values, agent by agent: enabled, command
// (a string, or a list when an array was given), args, mode, resume,
// approval, mcp_transport, then env.<VAR> and config_options.<id>. The
// value of a variable whose name says it holds a secret (KEY, TOKEN,
// SECRET, PASSWORD) is not shown, only its length.
func (c *Config) agentEntries() []Entry {
	var es []Entry
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		a := c.Agents[name]
		add := func(k string, v any) {
			es = append(es, Entry{Key: agentPrefix + name + "." + k, Value: v, Source: a.Sources[k]})
		}
		add("enabled", a.Enabled)
		// The command as written: a program, or an array of it and its
		// first arguments; args are the rest.
		var cmd any
		switch {
		case a.launchArgs > 0:
			cmd = append([]string{a.Command}, a.Args[:a.launchArgs]...)
		case a.Command != "":
			cmd = a.Command
		}
		add("command", cmd)
		add("args", a.Args[a.launchArgs:])
		var mode any
		if a.Mode != "" {
			mode = a.Mode
		}
		add("mode", mode)
		add("resume", a.Resume)
		add("approval", a.Approval)
		add("mcp_transport", a.MCPTransport)
		var host any
		if a.Host != "" {
			host = a.Host
		}
		add("host", host)
		for _, k := range slices.Sorted(maps.Keys(a.Env)) {
			add("env."+k, shownEnv(k, a.Env[k]))
		}
		for _, o := range a.ConfigOptions {
			add("config_options."+o.ID, o.Value)
		}
	}
	return es
}

// shownEnv is how `config` shows an agent's variable: a secret's length
// only.
func shownEnv(name, value string) string {
	up := strings.ToUpper(name)
	for _, s := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(up, s) {
			return fmt.Sprintf("(secret, %d characters)", len(value))
		}
	}
	return value
}
