package config

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Named sections: [plugins.atm-agent-mcp.agents.<name>] and
// [plugins.atm-agent-mcp.hosts.<name>] are read the same way, a table of
// tables in which each name is checked and each field takes the highest
// file that sets it. namedTable says what differs between the two.
type namedTable struct {
	// table is the key under the plugin: "agents", "hosts". The keys of
	// its values in Config.Sources start with table + ".".
	table string
	// keys are the keys a section may have, named in the error for a
	// section that is not a table.
	keys []string
	// holds names what the table holds in the error for a table that is
	// not a table of tables ("role presets"). optional: table's name.
	holds string
	// section is the error's Expected for a section that is not a table.
	// optional: "a table of " and keys.
	section string
	// entry names a section's name in that error ("model"). optional:
	// "name".
	entry string
	// quote quotes a section's name in the key of its Source (prices:
	// model names have dots).
	quote bool
	// refuse says why a section cannot take name ("" when it can): the
	// text is the error's Expected. optional: every name is taken.
	refuse func(name string) string
}

// prefix is the key prefix of the table's values in Config.Sources.
func (t namedTable) prefix() string { return t.table + "." }

// sections returns, by name, the files that define each well-formed
// section, highest first. A table that is not a table of tables, a name
// refused and a section that is not a table are errors and left out.
func (r *resolver) sections(t namedTable) map[string][]string {
	files := map[string][]string{}
	for _, f := range r.files {
		v, ok := f.get(pluginL(t.table))
		if !ok {
			continue
		}
		src := Source{Kind: SourceFile, Detail: f.path, Key: pluginKeyPrefix + t.table}
		tab, ok := v.(map[string]any)
		if !ok {
			holds := cmp.Or(t.holds, t.table)
			r.errs = append(r.errs, &Error{Key: t.table, Source: src, Value: tomlText(v), Expected: "a table of " + holds + " ([" + pluginKeyPrefix + t.table + ".<" + cmp.Or(t.entry, "name") + ">])"})
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(tab)) {
			s := src
			if t.quote {
				s.Key += "." + strconv.Quote(name)
			} else {
				s.Key += "." + name
			}
			expected := ""
			if t.refuse != nil {
				expected = t.refuse(name)
			}
			if _, isTable := tab[name].(map[string]any); expected == "" && !isTable {
				expected = cmp.Or(t.section, "a table of "+strings.Join(t.keys, ", "))
			}
			if expected != "" {
				r.errs = append(r.errs, &Error{Key: t.prefix() + name, Source: s, Value: tomlText(tab[name]), Expected: expected})
				continue
			}
			files[name] = append(files[name], f.path)
		}
	}
	return files
}

// section is one named section being resolved: where its keys are looked
// up, and how a value found is decoded and its source recorded.
type section struct {
	r    *resolver
	t    namedTable
	name string
	// sources are the section's own sources by key (AgentConfig.Sources,
	// HostConfig.Sources); set records in both.
	sources map[string]Source
}

// at is the lookup of a key path in the section.
func (s section) at(path ...string) []lookup {
	return []lookup{pluginL(append([]string{s.t.table, s.name}, path...)...)}
}

// key is the section key of path in Config.Sources (agents.claude.mode).
func (s section) key(path ...string) string {
	return s.t.prefix() + s.name + "." + strings.Join(path, ".")
}

// set records where key k's value came from.
func (s section) set(k string, src Source) {
	s.sources[k] = src
	s.r.sources[s.key(k)] = src
}

// get finds and decodes one key; a bad value is an error and unset.
func (s section) get(d decoder, path ...string) (any, Source, bool) {
	raw, src, ok := s.r.find(s.at(path...))
	if !ok {
		return nil, Source{}, false
	}
	v, ok := d.decode(raw, src)
	if !ok {
		s.r.errs = append(s.r.errs, &Error{Key: s.key(path...), Source: src, Value: rawText(raw, src), Expected: d.expected})
		return nil, Source{}, false
	}
	return v, src, true
}

// missing records a required key that no file sets: the error points at
// the highest file with the section.
func (s section) missing(files []string, k, expected string) {
	s.r.errs = append(s.r.errs, &Error{Key: s.key(k),
		Source:   Source{Kind: SourceFile, Detail: files[0], Key: pluginKeyPrefix + s.key(k)},
		Value:    "(missing)",
		Expected: expected})
}

// subkeys returns the keys of the section's sub-table k (env,
// config_options, agents), merged across files in order. A file's k that
// is not a table is an error with expected; a key that check refuses (its
// text is the error's Expected) is an error and left out.
func (s section) subkeys(k, expected string, check func(key string) string) []string {
	keys := map[string]bool{}
	for _, f := range s.r.files {
		v, ok := f.get(s.at(k)[0])
		if !ok {
			continue
		}
		src := Source{Kind: SourceFile, Detail: f.path, Key: pluginKeyPrefix + s.key(k)}
		t, ok := v.(map[string]any)
		if !ok {
			s.r.errs = append(s.r.errs, &Error{Key: s.key(k), Source: src, Value: tomlText(v), Expected: expected})
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(t)) {
			if why := check(key); why != "" {
				ks := src
				ks.Key += "." + key
				s.r.errs = append(s.r.errs, &Error{Key: s.key(k, key), Source: ks, Value: tomlText(t[key]), Expected: why})
				continue
			}
			keys[key] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// anyKey is a subkeys check that takes every key.
func anyKey(string) string { return "" }

// unknownKeys warns about the keys of the table's sections in file f that
// nothing reads; what names a key in the message ("agent", "host").
func (t namedTable) unknownKeys(f *fileLayer, what string) []Warning {
	var ws []Warning
	sections, _ := f.plugin[t.table].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		tab, _ := sections[name].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(tab)) {
			if !slices.Contains(t.keys, k) {
				ws = append(ws, Warning{File: f.path, Key: pluginKeyPrefix + t.prefix() + name + "." + k, Message: "unknown " + what + " key, ignored" + suggest(k, t.keys)})
			}
		}
	}
	return ws
}

// programLine decodes a program and its first arguments: a string (the
// program alone) or an array of strings, the program not blank.
func programLine(v any, src Source) ([]string, bool) {
	var cmd []string
	switch v := v.(type) {
	case string:
		cmd = []string{v}
	case []any:
		s, ok := stringsDec.decode(v, src)
		if !ok {
			return nil, false
		}
		cmd = s.([]string)
	default:
		return nil, false
	}
	if len(cmd) == 0 || strings.TrimSpace(cmd[0]) == "" {
		return nil, false
	}
	return cmd, true
}
