package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

const (
	registryFile = "registry.json"
	auditFile    = "audit.jsonl"

	// FormatVersion is the registry.json format this package writes.
	FormatVersion = 1
)

// ErrUnsupportedVersion is returned for a registry file written by a newer
// format version, which this package refuses to rewrite.
var ErrUnsupportedVersion = errors.New("registry: unsupported registry format version")

// fileState is the content of one registry.json.
type fileState struct {
	version  int
	sessions []Session
	extra    map[string]json.RawMessage // unknown top-level keys
}

// decodeFile parses registry.json. A missing or zero version means 1; a
// missing or null session list means none.
func decodeFile(data []byte) (fileState, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fileState{}, err
	}
	if top == nil {
		return fileState{}, errors.New("registry file is null")
	}
	st := fileState{version: FormatVersion}
	if v, ok := top["version"]; ok {
		var n int
		if err := json.Unmarshal(v, &n); err != nil {
			return fileState{}, fmt.Errorf("version: %w", err)
		}
		if n > FormatVersion {
			return fileState{}, fmt.Errorf("%w %d (this build reads up to %d)", ErrUnsupportedVersion, n, FormatVersion)
		}
		if n > 0 {
			st.version = n
		}
	}
	if v, ok := top["sessions"]; ok {
		if err := json.Unmarshal(v, &st.sessions); err != nil {
			return fileState{}, fmt.Errorf("sessions: %w", err)
		}
	}
	for k, v := range top {
		if k == "version" || k == "sessions" {
			continue
		}
		if st.extra == nil {
			st.extra = make(map[string]json.RawMessage)
		}
		st.extra[k] = v
	}
	return st, nil
}

// encodeSession renders one session as it appears inside the file's
// session list (indented for that depth, without the leading indent).
func encodeSession(s Session) ([]byte, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(b) + len(b)/4)
	if err := json.Indent(&buf, b, "    ", "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeFile renders registry.json: pretty JSON with a 2-space indent, one
// trailing newline, unknown top-level keys after the known ones. enc
// renders one session; nil means encodeSession.
func encodeFile(st fileState, enc func(Session) ([]byte, error)) ([]byte, error) {
	if enc == nil {
		enc = encodeSession
	}
	size := 256
	encoded := make([][]byte, len(st.sessions))
	for i, s := range st.sessions {
		b, err := enc(s)
		if err != nil {
			return nil, err
		}
		encoded[i] = b
		size += len(b) + 6
	}
	var buf bytes.Buffer
	buf.Grow(size)
	fmt.Fprintf(&buf, "{\n  \"version\": %d,\n  \"sessions\": [", FormatVersion)
	for i, b := range encoded {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		buf.Write(b)
	}
	if len(st.sessions) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteByte(']')
	for _, k := range slices.Sorted(maps.Keys(st.extra)) {
		if k == "version" || k == "sessions" {
			continue
		}
		key, _ := json.Marshal(k)
		buf.WriteString(",\n  ")
		buf.Write(key)
		buf.WriteString(": ")
		if err := json.Indent(&buf, st.extra[k], "  ", "  "); err != nil {
			return nil, fmt.Errorf("extra field %q: %w", k, err)
		}
	}
	buf.WriteString("\n}\n")
	return buf.Bytes(), nil
}
