package proxy

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// args are a tool call's arguments. Accessors fail with -32602 naming the
// argument when its type is wrong.
type args map[string]json.RawMessage

// parseArgs splits the arguments object (valid JSON, from a parsed
// message) into its members; a repeated name keeps its last value, as
// encoding/json does.
func parseArgs(raw json.RawMessage) (args, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return args{}, nil
	}
	var buf [16]jsonrpcframe.Member
	members, ok := jsonrpcframe.AppendMembers(buf[:0], raw)
	if !ok {
		return nil, newError(ErrInvalidParams, nil, "arguments must be a JSON object")
	}
	a := make(args, len(members))
	for _, m := range members {
		a[m.Name()] = json.RawMessage(m.Value)
	}
	return a, nil
}

func (a args) has(name string) bool {
	v, ok := a[name]
	return ok && string(v) != "null"
}

func typeError(name, want string) error {
	return newError(ErrInvalidParams, map[string]any{"argument": name}, "argument %q must be %s", name, want)
}

// str returns a string argument ("" when absent).
func (a args) str(name string) (string, error) {
	if !a.has(name) {
		return "", nil
	}
	s, ok := jsonrpcframe.String(a[name])
	if !ok {
		return "", typeError(name, "a string")
	}
	return s, nil
}

// boolean returns a boolean argument and whether it was given.
func (a args) boolean(name string) (bool, bool, error) {
	if !a.has(name) {
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(a[name], &b); err != nil {
		return false, false, typeError(name, "a boolean")
	}
	return b, true, nil
}

// integer returns an integer argument and whether it was given.
func (a args) integer(name string) (int, bool, error) {
	if !a.has(name) {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(a[name], &f); err != nil || f != float64(int(f)) {
		return 0, false, typeError(name, "an integer")
	}
	return int(f), true, nil
}

// object returns an object argument (nil when absent).
func (a args) object(name string) (map[string]any, error) {
	if !a.has(name) {
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
func (a args) unknown(allowed ...string) []string {
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

// checkUnknown fails with -32602 when a has arguments outside allowed.
func (a args) checkUnknown(tool string, allowed ...string) error {
	if bad := a.unknown(allowed...); len(bad) > 0 {
		return newError(ErrInvalidParams, map[string]any{"arguments": bad},
			"unknown argument(s) for %s: %s (expected one of: %s)", tool, strings.Join(bad, ", "), strings.Join(allowed, ", "))
	}
	return nil
}
