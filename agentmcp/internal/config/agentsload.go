package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// agentKeys are the keys of an agent section; any other key draws a
// warning.
var agentKeys = []string{"command", "args", "env", "mode", "config_options", "resume", "approval", "enabled", "mcp_transport", "host"}

// agentName is the form of an agent's name: it is a tool argument
// (agent_start's agent) and part of configuration keys.
var agentName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// envVarName is the form of an environment variable's name.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// agentPrefix is the key prefix of agent values in Config.Sources.
const agentPrefix = "agents."

// agentTable is [plugins.atm-agent-mcp.agents].
var agentTable = namedTable{table: "agents", keys: agentKeys, refuse: func(name string) string {
	switch {
	case name == CodexAgent:
		return `a name other than codex: "codex" is the built-in Codex backend, set up by codex_bin, backend, model … in [plugins.atm-agent-mcp]`
	case !agentName.MatchString(name):
		return "an agent named in lower case: a letter, then letters, digits, - or _ (at most 32)" + suggest(name, presetNames())
	}
	return ""
}}

// agents resolves the agent kinds: every preset, and every section of
// [plugins.atm-agent-mcp.agents], each field taking the highest file that
// sets it and the env and config_options tables merging entry by entry.
func (r *resolver) agents() map[string]AgentConfig {
	files := r.sections(agentTable)
	names := maps.Clone(files)
	for _, p := range presets {
		if _, ok := names[p.Name]; !ok {
			names[p.Name] = nil
		}
	}
	out := make(map[string]AgentConfig, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		out[name] = r.agent(name, files[name])
	}
	return out
}

// presetNames are the names of the presets.
func presetNames() []string {
	var out []string
	for _, p := range presets {
		out = append(out, p.Name)
	}
	return out
}

// agent resolves one agent kind: the files' values over the preset's.
func (r *resolver) agent(name string, files []string) AgentConfig {
	p, isPreset := preset(name)
	a := AgentConfig{Name: name, Files: files, Env: map[string]string{}, Sources: map[string]Source{}}
	if isPreset {
		a.Preset, a.ModelWire, a.Install = p.Name, p.ModelWire, p.Install()
	}
	presetSrc := Source{Kind: SourcePreset, Detail: name}
	sec := section{r: r, t: agentTable, name: name, sources: a.Sources}
	set, get := sec.set, sec.get
	// pick sets a string field from the files, else from the preset (when
	// it has a value), else the default.
	pick := func(dst *string, k string, d decoder, presetValue, def string) {
		switch v, src, ok := get(d, k); {
		case ok:
			*dst = v.(string)
			set(k, src)
		case presetValue != "":
			*dst = presetValue
			set(k, presetSrc)
		default:
			*dst = def
			set(k, Source{Kind: SourceDefault})
		}
	}

	a.Enabled = true
	set("enabled", Source{Kind: SourceDefault})
	if v, src, ok := get(boolDec, "enabled"); ok {
		a.Enabled = v.(bool)
		set("enabled", src)
	}
	pick(&a.Approval, "approval", enumDec(AgentApprovals), "", DefaultAgentApproval)
	pick(&a.Resume, "resume", enumDec(AgentResumes), p.Resume, DefaultAgentResume)
	pick(&a.MCPTransport, "mcp_transport", enumDec(AgentTransports), "", DefaultAgentTransport)
	askMode := ""
	if a.Approval == "ask" {
		askMode = p.AskMode
	}
	pick(&a.Mode, "mode", stringDec, askMode, "")
	pick(&a.Host, "host", stringDec, "", "")

	// The command, and the arguments.
	var tail []string
	if v, src, ok := get(r.commandDec(), "command"); ok {
		cmd := v.([]string)
		a.Command, tail = cmd[0], cmd[1:]
		set("command", src)
	} else if isPreset {
		a.Command = p.Command
		set("command", presetSrc)
	} else if _, _, found := r.find(sec.at("command")); !found && a.Enabled {
		sec.missing(files, "command", "the agent's program: a name or path, or an array of the program and its first arguments (an agent that is not a preset needs one)")
	}
	args := p.Args
	set("args", presetSrc)
	if !isPreset {
		set("args", Source{Kind: SourceDefault})
	}
	if v, src, ok := get(stringsDec, "args"); ok {
		args = v.([]string)
		set("args", src)
	}
	a.Args = append(slices.Clone(tail), args...)
	if a.Args == nil {
		a.Args = []string{}
	}
	a.launchArgs = len(tail)

	r.agentEnv(&a, p, presetSrc, sec)
	a.ConfigOptions = r.agentOptions(sec)
	return a
}

// agentEnv resolves the agent's environment: the user's env table (merged
// across files, entry by entry), then the preset's variables that neither
// the table nor serve's environment sets, then, with approval ask, the
// preset's ask variables (a JSON one merged under the user's value).
func (r *resolver) agentEnv(a *AgentConfig, p AgentPreset, presetSrc Source, sec section) {
	set := func(k string, v string, src Source) {
		a.Env[k] = v
		sec.set("env."+k, src)
	}
	vars := sec.subkeys("env", "a table of VARIABLE = \"value\"", func(k string) string {
		if !envVarName.MatchString(k) {
			return "a variable name (letters, digits and _)"
		}
		return ""
	})
	for _, k := range vars {
		raw, src, _ := r.find(sec.at("env", k))
		s, ok := raw.(string)
		if !ok {
			r.errs = append(r.errs, &Error{Key: sec.key("env", k), Source: src, Value: tomlText(raw), Expected: "a string"})
			continue
		}
		set(k, s, src)
	}
	own := func(k string) (string, Source, bool) {
		if v, ok := a.Env[k]; ok {
			return v, a.Sources["env."+k], true
		}
		if v, ok := r.env(k); ok {
			return v, Source{Kind: SourceEnv, Detail: k}, true
		}
		return "", Source{}, false
	}
	presetEnv := maps.Clone(p.Env)
	if a.Approval == "ask" {
		for k, v := range p.AskEnv {
			if presetEnv == nil {
				presetEnv = map[string]string{}
			}
			presetEnv[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(presetEnv)) {
		v, src, ok := own(k)
		switch {
		case !ok:
			set(k, presetEnv[k], presetSrc)
		case slices.Contains(jsonEnv, k):
			merged, err := mergeJSON(presetEnv[k], v)
			if err == nil {
				set(k, merged, Source{Kind: SourcePreset, Detail: a.Name + " merged with " + src.String()})
				continue
			}
			if src.Kind == SourceFile {
				r.errs = append(r.errs, &Error{Key: agentPrefix + a.Name + ".env." + k, Source: src, Value: fmt.Sprintf("%q", v),
					Expected: "a JSON object (the preset merges its permission settings into it; " + err.Error() + ")"})
				continue
			}
			r.warnings = append(r.warnings, Warning{File: src.String(), Key: agentPrefix + a.Name + ".env." + k,
				Message: fmt.Sprintf("not a JSON object (%v): the %s preset cannot merge the settings that make %s ask for permission into it", err, a.Name, a.Name)})
		case src.Kind == SourceEnv && slices.Contains(exactEnv, k) && v != presetEnv[k]:
			// serve's own value would not do what the preset needs.
			set(k, presetEnv[k], Source{Kind: SourcePreset, Detail: fmt.Sprintf("%s, over env %s=%s", a.Name, k, v)})
		default:
			set(k, v, src)
		}
	}
}

// agentOptions resolves the config_options table, merged across files
// entry by entry, in order of id.
func (r *resolver) agentOptions(sec section) []AgentOption {
	ids := sec.subkeys("config_options", "a table of option = value", anyKey)
	out := []AgentOption{}
	for _, id := range ids {
		raw, src, _ := r.find(sec.at("config_options", id))
		switch raw.(type) {
		case string, bool, int64, float64:
			out = append(out, AgentOption{ID: id, Value: raw})
			sec.set("config_options."+id, src)
		default:
			r.errs = append(r.errs, &Error{Key: sec.key("config_options", id), Source: src, Value: tomlText(raw), Expected: "a string, boolean or number"})
		}
	}
	return out
}

// stringsDec decodes an array of strings.
var stringsDec = decoder{
	expected: "an array of strings",
	decode: func(v any, _ Source) (any, bool) {
		arr, ok := v.([]any)
		if !ok {
			return nil, false
		}
		out := make([]string, 0, len(arr))
		for _, e := range arr {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	},
}

// commandDec decodes an agent's command: a program (a name looked up in
// PATH, or a path made absolute as pathDec does), or an array of the
// program and its first arguments. A name with blanks is refused: a
// command with arguments is an array.
func (r *resolver) commandDec() decoder {
	return decoder{
		expected: `the agent's program: a name or path, or an array of the program and its first arguments (["npx", "-y", "package"])`,
		decode: func(v any, src Source) (any, bool) {
			cmd, ok := programLine(v, src)
			if !ok {
				return nil, false
			}
			prog := cmd[0]
			isPath := strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator) || prog == "~"
			if !isPath && strings.ContainsAny(prog, " \t") {
				return nil, false
			}
			if isPath {
				cmd[0] = r.absPath(prog, src)
			}
			return cmd, true
		},
	}
}

// mergeJSON merges the JSON object user over the JSON object base: a key
// set in both takes the user's value, unless both are objects, which merge
// the same way. The result is compact JSON with sorted keys.
func mergeJSON(base, user string) (string, error) {
	var b, u map[string]any
	if err := json.Unmarshal([]byte(base), &b); err != nil {
		return "", fmt.Errorf("preset: %w", err)
	}
	if err := json.Unmarshal([]byte(user), &u); err != nil || u == nil {
		if err == nil {
			err = errors.New("null")
		}
		return "", err
	}
	out, err := json.Marshal(mergeObjects(b, u))
	return string(out), err
}

func mergeObjects(base, user map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, uv := range user {
		bo, bok := out[k].(map[string]any)
		uo, uok := uv.(map[string]any)
		if bok && uok {
			out[k] = mergeObjects(bo, uo)
			continue
		}
		out[k] = uv
	}
	return out
}
