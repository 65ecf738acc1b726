package mcpconn

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Args are a tool call's arguments by name. Accessors fail with
// INVALID_PARAMS (-32602) naming the argument when its type is wrong; an
// argument that is absent or null reads as its zero value.
type Args map[string]json.RawMessage

// ParseArgs splits the arguments object (valid JSON, from a parsed
// message) into its members; a repeated name keeps its last value, as
// encoding/json does. Absent or null arguments are no arguments.
func ParseArgs(raw json.RawMessage) (Args, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Args{}, nil
	}
	var buf [16]jsonrpcframe.Member
	members, ok := jsonrpcframe.AppendMembers(buf[:0], raw)
	if !ok {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, nil, "arguments must be a JSON object")
	}
	a := make(Args, len(members))
	for _, m := range members {
		a[m.Name()] = json.RawMessage(m.Value)
	}
	return a, nil
}

// Has reports whether the argument is given and not null.
func (a Args) Has(name string) bool {
	v, ok := a[name]
	return ok && string(v) != "null"
}

func typeError(name, want string) error {
	return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": name}, "argument %q must be %s", name, want)
}

// Str returns a string argument ("" when absent).
func (a Args) Str(name string) (string, error) {
	if !a.Has(name) {
		return "", nil
	}
	s, ok := jsonrpcframe.String(a[name])
	if !ok {
		return "", typeError(name, "a string")
	}
	return s, nil
}

// Strs returns the string arguments names by name ("" for each absent),
// or the first one that is not a string.
func (a Args) Strs(names ...string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, err := a.Str(n)
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

// Bool returns a boolean argument and whether it was given.
func (a Args) Bool(name string) (v, set bool, err error) {
	if !a.Has(name) {
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(a[name], &b); err != nil {
		return false, false, typeError(name, "a boolean")
	}
	return b, true, nil
}

// Int returns an integer argument and whether it was given.
func (a Args) Int(name string) (v int, set bool, err error) {
	if !a.Has(name) {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(a[name], &f); err != nil || f != float64(int(f)) {
		return 0, false, typeError(name, "an integer")
	}
	return int(f), true, nil
}

// Object returns an object argument (nil when absent), its numbers as
// json.Number.
func (a Args) Object(name string) (map[string]any, error) {
	if !a.Has(name) {
		return nil, nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(a[name]))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, typeError(name, "an object")
	}
	return m, nil
}

// unknown returns the argument names not in allowed, sorted.
func (a Args) unknown(allowed ...string) []string {
	ok := map[string]bool{}
	for _, n := range allowed {
		ok[n] = true
	}
	var bad []string
	for n := range a {
		if !ok[n] {
			bad = append(bad, n)
		}
	}
	sort.Strings(bad)
	return bad
}

// CheckUnknown fails with INVALID_PARAMS when a has arguments outside
// allowed, naming them and the tool.
func (a Args) CheckUnknown(tool string, allowed ...string) error {
	bad := a.unknown(allowed...)
	if len(bad) > 0 && len(allowed) == 0 {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"arguments": bad},
			"%s takes no arguments (got: %s)", tool, strings.Join(bad, ", "))
	}
	if len(bad) > 0 {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"arguments": bad},
			"unknown argument(s) for %s: %s (expected one of: %s)", tool, strings.Join(bad, ", "), strings.Join(allowed, ", "))
	}
	return nil
}
