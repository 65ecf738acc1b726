package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
)

// enums are the enumerated arguments of every tool as tools.json declares
// them (the one source of truth): tool → argument → allowed values. A value
// outside its enum never reaches Codex (checkEnums).
var enums = mustEnums(Definitions)

// configEnums are the Codex config overrides (the codex tool's config
// argument) that set what an enumerated argument of the codex tool sets:
// their values are checked against that argument's enum.
var configEnums = map[string]string{"sandbox_mode": "sandbox", "approval_policy": "approval-policy"}

// schemaEnums reads the enums of the tools' input schemas from defs (a
// tools/list array). Every enum must list strings: the arguments are read
// as strings.
func schemaEnums(defs []byte) (map[string]map[string][]string, error) {
	var tools []struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]struct {
				Enum []any `json:"enum"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(defs, &tools); err != nil {
		return nil, fmt.Errorf("tools.json: %w", err)
	}
	out := map[string]map[string][]string{}
	for _, t := range tools {
		for name, p := range t.InputSchema.Properties {
			if len(p.Enum) == 0 {
				continue
			}
			vals := make([]string, 0, len(p.Enum))
			for _, v := range p.Enum {
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("tools.json: %s.%s: enum value %v is not a string", t.Name, name, v)
				}
				vals = append(vals, s)
			}
			if out[t.Name] == nil {
				out[t.Name] = map[string][]string{}
			}
			out[t.Name][name] = vals
		}
	}
	return out, nil
}

func mustEnums(defs []byte) map[string]map[string][]string {
	e, err := schemaEnums(defs)
	if err != nil {
		panic(err)
	}
	return e
}

// checkEnums fails with INVALID_PARAMS (-32602) for an argument of tool
// whose value is outside the enum tools.json declares for it, naming the
// allowed values.
func checkEnums(tool string, a mcpconn.Args) error {
	args := enums[tool]
	for _, name := range slices.Sorted(maps.Keys(args)) {
		if !a.Has(name) {
			continue
		}
		v, err := a.Str(name)
		if err != nil {
			return err
		}
		if err := oneOf("argument", name, v, args[name]); err != nil {
			return err
		}
	}
	return nil
}

// checkConfigEnums checks the config overrides of a codex call that mirror
// an enumerated argument (configEnums) against that argument's enum.
func checkConfigEnums(config map[string]any) error {
	for _, key := range slices.Sorted(maps.Keys(configEnums)) {
		v, ok := config[key]
		if !ok {
			continue
		}
		allowed := enums["codex"][configEnums[key]]
		s, isString := v.(string)
		if !isString {
			return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "config", "key": key, "allowed": allowed},
				"config key %q must be a string, one of: %s", key, strings.Join(allowed, ", "))
		}
		if err := oneOf("config key", key, s, allowed); err != nil {
			return err
		}
	}
	return nil
}

// oneOf fails with INVALID_PARAMS unless v is one of allowed.
func oneOf(what, name, v string, allowed []string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	data := map[string]any{"allowed": allowed}
	if what == "argument" {
		data["argument"] = name
	} else {
		data["argument"], data["key"] = "config", name
	}
	return proxyerr.New(proxyerr.ErrInvalidParams, data, "%s %q must be one of: %s (got %q)", what, name, strings.Join(allowed, ", "), v)
}
