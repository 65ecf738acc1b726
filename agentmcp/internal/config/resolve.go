package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// lookup is one place a key may be set.
type lookup struct {
	kind SourceKind
	name string   // flag ("--model") or environment variable
	sect string   // file: "core" or "plugin"
	path []string // file: key path inside the section
}

func flagL(name string) lookup { return lookup{kind: SourceFlag, name: name} }
func envL(name string) lookup  { return lookup{kind: SourceEnv, name: name} }
func coreL(path ...string) lookup {
	return lookup{kind: SourceFile, sect: "core", path: path}
}
func pluginL(path ...string) lookup {
	return lookup{kind: SourceFile, sect: "plugin", path: path}
}

// fileKey is the full TOML key of a file lookup.
func (l lookup) fileKey() string {
	if l.sect == "core" {
		return "core." + strings.Join(l.path, ".")
	}
	return pluginKeyPrefix + strings.Join(l.path, ".")
}

// envName is the environment variable of a plugin key.
func envName(key string) string { return "ATM_AGENT_MCP_" + strings.ToUpper(key) }

// std is the usual chain of a plugin key: its flag (if any), its
// ATM_AGENT_MCP_ variable, then the files.
func std(key, flag string) []lookup {
	var ls []lookup
	if flag != "" {
		ls = append(ls, flagL(flag))
	}
	return append(ls, envL(envName(key)), pluginL(key))
}

// get returns the value at l in the file.
func (f *fileLayer) get(l lookup) (any, bool) {
	m := f.plugin
	if l.sect == "core" {
		m = f.core
	}
	for i, p := range l.path {
		if m == nil {
			return nil, false
		}
		v, ok := m[p]
		if !ok {
			return nil, false
		}
		if i == len(l.path)-1 {
			return v, true
		}
		m, _ = v.(map[string]any)
	}
	return nil, false
}

// resolver resolves keys through the layers and records sources and errors.
type resolver struct {
	flags    map[string]any // by flag name, e.g. "--model"
	env      func(string) (string, bool)
	files    []*fileLayer // highest layer first
	cwd      string
	userHome string // for ~ in paths
	sources  map[string]Source
	errs     []error
	warnings []Warning
}

// find returns the first value set along chain.
func (r *resolver) find(chain []lookup) (any, Source, bool) {
	for _, l := range chain {
		switch l.kind {
		case SourceFlag:
			if v, ok := r.flags[l.name]; ok {
				return v, Source{Kind: SourceFlag, Detail: l.name}, true
			}
		case SourceEnv:
			if v, ok := r.env(l.name); ok {
				return v, Source{Kind: SourceEnv, Detail: l.name}, true
			}
		case SourceFile:
			for _, f := range r.files {
				if v, ok := f.get(l); ok {
					return v, Source{Kind: SourceFile, Detail: f.path, Key: l.fileKey()}, true
				}
			}
		}
	}
	return nil, Source{}, false
}

// decoder turns a raw value (a string from a flag or the environment, or a
// decoded TOML value) into the key's value; ok is false when it does not fit.
type decoder struct {
	expected string
	decode   func(v any, src Source) (any, bool)
}

// resolve finds key along chain and decodes it; unset keys take def and a
// default source. A bad value is recorded as an error and yields def.
func (r *resolver) resolve(key string, def any, chain []lookup, d decoder) any {
	raw, src, ok := r.find(chain)
	if !ok {
		r.sources[key] = Source{Kind: SourceDefault}
		return def
	}
	v, ok := d.decode(raw, src)
	if !ok {
		r.errs = append(r.errs, &Error{Key: key, Source: src, Value: rawText(raw, src), Expected: d.expected})
		r.sources[key] = src
		return def
	}
	r.sources[key] = src
	return v
}

// rawText renders a raw value for an error message.
func rawText(v any, src Source) string {
	if s, ok := v.(string); ok && src.Kind != SourceFile {
		return strconv.Quote(s)
	}
	return tomlText(v)
}

func (r *resolver) str(key, def string, chain []lookup) string {
	return r.resolve(key, def, chain, stringDec).(string)
}

func (r *resolver) enum(key, def string, allowed []string, chain []lookup) string {
	return r.resolve(key, def, chain, enumDec(allowed)).(string)
}

func (r *resolver) name(key, def string, chain []lookup) string {
	return r.resolve(key, def, chain, nameDec).(string)
}

func (r *resolver) boolean(key string, def bool, chain []lookup) bool {
	return r.resolve(key, def, chain, boolDec).(bool)
}

func (r *resolver) integer(key string, def int, min int, chain []lookup) int {
	return r.resolve(key, def, chain, intDec(min)).(int)
}

func (r *resolver) path(key string, chain []lookup) string {
	return r.resolve(key, "", chain, r.pathDec()).(string)
}

// millis resolves a key in milliseconds.
func (r *resolver) millis(key string, def time.Duration, min int, chain []lookup) time.Duration {
	return time.Duration(r.integer(key, int(def/time.Millisecond), min, chain)) * time.Millisecond
}

// seconds resolves a key in seconds; a flag or variable may also be a Go
// duration such as 90s or 5m.
func (r *resolver) seconds(key string, def time.Duration, chain []lookup) time.Duration {
	return r.resolve(key, def, chain, secondsDec).(time.Duration)
}

var stringDec = decoder{
	expected: "a string",
	decode: func(v any, _ Source) (any, bool) {
		s, ok := v.(string)
		return s, ok
	},
}

func enumDec(allowed []string) decoder {
	return decoder{
		expected: "one of " + strings.Join(allowed, ", "),
		decode: func(v any, _ Source) (any, bool) {
			s, ok := v.(string)
			return s, ok && slices.Contains(allowed, s)
		},
	}
}

var nameDec = decoder{
	expected: `a name (not empty; no "/", "\", ".." or control characters)`,
	decode: func(v any, _ Source) (any, bool) {
		s, ok := v.(string)
		return s, ok && atmclient.ValidateName("name", s) == nil
	},
}

var boolDec = decoder{
	expected: "true or false",
	decode: func(v any, src Source) (any, bool) {
		switch v := v.(type) {
		case bool:
			return v, true
		case string:
			if src.Kind == SourceFile {
				return false, false // TOML has booleans
			}
			b, err := parseBool(v)
			return b, err == nil
		}
		return false, false
	},
}

// parseBool accepts true/false, 1/0 and yes/no, in any case.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", s)
}

func intDec(min int) decoder {
	exp := "a positive integer"
	if min == 0 {
		exp = "an integer of 0 or more"
	}
	return decoder{
		expected: exp,
		decode: func(v any, src Source) (any, bool) {
			var n int64
			switch v := v.(type) {
			case int64:
				n = v
			case string:
				if src.Kind == SourceFile {
					return 0, false // TOML has integers
				}
				i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, false
				}
				n = i
			default:
				return 0, false
			}
			if n < int64(min) || n > 1<<31 {
				return 0, false
			}
			return int(n), true
		},
	}
}

var secondsDec = decoder{
	expected: "a positive number of seconds",
	decode: func(v any, src Source) (any, bool) {
		switch v := v.(type) {
		case int64:
			if v <= 0 || v > 1<<31 {
				return time.Duration(0), false
			}
			return time.Duration(v) * time.Second, true
		case string:
			if src.Kind == SourceFile {
				return time.Duration(0), false // TOML has integers
			}
			s := strings.TrimSpace(v)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return time.Duration(n) * time.Second, n > 0 && n <= 1<<31
			}
			d, err := time.ParseDuration(s)
			return d, err == nil && d > 0
		}
		return time.Duration(0), false
	},
}

// pathDec resolves a path: "~/" is the user's home; a relative path is
// relative to the directory of the file that set it, or to the working
// directory for a flag or variable. An empty string stays empty.
func (r *resolver) pathDec() decoder {
	return decoder{
		expected: "a path (string)",
		decode: func(v any, src Source) (any, bool) {
			s, ok := v.(string)
			if !ok {
				return "", false
			}
			return r.absPath(s, src), true
		},
	}
}

// absPath makes s absolute as pathDec describes.
func (r *resolver) absPath(s string, src Source) string {
	switch {
	case s == "":
		return ""
	case s == "~" || strings.HasPrefix(s, "~/"):
		return filepath.Join(r.userHome, s[1:])
	case filepath.IsAbs(s):
		return filepath.Clean(s)
	case src.Kind == SourceFile:
		return filepath.Join(filepath.Dir(src.Detail), s)
	}
	return filepath.Join(r.cwd, s)
}

// program resolves codex_bin: a bare name stays a name (looked up in PATH
// when Codex is started); anything with a path separator is a path.
func (r *resolver) program(key, def string, chain []lookup) string {
	return r.resolve(key, def, chain, decoder{
		expected: "a program name or path",
		decode: func(v any, src Source) (any, bool) {
			s, ok := v.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return "", false
			}
			if !strings.ContainsRune(s, '/') && !strings.ContainsRune(s, filepath.Separator) && s != "~" {
				return s, true
			}
			return r.absPath(s, src), true
		},
	}).(string)
}
