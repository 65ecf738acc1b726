package atmclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/jsonarray"
)

// entry is one element of an inbox file as this package holds it: the
// element's bytes in the canonical layout (indented for depth one of the
// array) and, when it is a valid message, the decoded message. Entries are
// shared between snapshots and never modified.
type entry struct {
	raw   []byte    // canonical element bytes; the original bytes when !valid
	valid bool      // raw is syntactically valid JSON
	msg   Message   // decoded message when err == nil
	err   error     // why the element is not a message
	key   string    // msg.Key() when err == nil
	at    time.Time // msg.Time(), zero when unparsable or not a message
}

// newEntry validates, canonicalizes and decodes one element.
func newEntry(elem []byte) *entry {
	var buf bytes.Buffer
	buf.Grow(len(elem) + len(elem)/4)
	if err := json.Indent(&buf, elem, "  ", "  "); err != nil {
		return &entry{raw: bytes.Clone(elem), err: fmt.Errorf("%w: invalid JSON: %v", errNotMessage, err)}
	}
	e := &entry{raw: buf.Bytes(), valid: true}
	if err := json.Unmarshal(elem, &e.msg); err != nil {
		e.err = err
		return e
	}
	e.key = e.msg.Key()
	e.at, _ = e.msg.Time()
	return e
}

// entryFor returns the entry of a message this package creates.
func entryFor(m Message) (*entry, error) {
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	e := newEntry(b)
	if e.err != nil {
		return nil, e.err
	}
	return e, nil
}

// snapshot is one parse of an inbox file.
type snapshot struct {
	data    []byte   // the bytes parsed
	entries []*entry // one per array element, in file order
}

// invalid returns the index of the first element that is not valid JSON,
// or -1.
func (s *snapshot) invalid() int {
	return slices.IndexFunc(s.entries, func(e *entry) bool { return !e.valid })
}

// parseEntries splits data into entries. An error means data is not a JSON
// array whose element boundaries can be found.
func parseEntries(data []byte) ([]*entry, error) {
	elems, err := jsonarray.Split(data)
	if err != nil {
		return nil, err
	}
	entries := make([]*entry, len(elems))
	for i, el := range elems {
		entries[i] = newEntry(el)
	}
	return entries, nil
}

// encodeEntries writes entries as the inbox file format: a pretty array with
// two-space indentation, no trailing newline, "[]" when empty.
func encodeEntries(entries []*entry) []byte {
	if len(entries) == 0 {
		return []byte("[]")
	}
	n := 4
	for _, e := range entries {
		n += len(e.raw) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, "[\n  "...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ",\n  "...)
		}
		b = append(b, e.raw...)
	}
	return append(b, "\n]"...)
}

// parseCache remembers the last snapshot of each inbox so that a file that
// only grew by appended elements is parsed only in its new tail. A file
// ending in "\n]" whose bytes before that are a prefix of the new file, which
// continues with ",", holds the old elements followed by the elements of
// "[" + the rest; every writer of the pretty format appends that way. Any
// other change is a full parse.
type parseCache struct {
	mu sync.Mutex
	m  map[string]*snapshot
}

const maxCachedInboxes = 64

func (c *parseCache) parse(path string, data []byte) (*snapshot, error) {
	c.mu.Lock()
	prev := c.m[path]
	c.mu.Unlock()
	var entries []*entry
	switch {
	case prev != nil && bytes.Equal(prev.data, data):
		return prev, nil
	case prev != nil && extends(prev, data):
		tail := append([]byte{'['}, data[len(prev.data)-1:]...)
		more, err := parseEntries(tail)
		if err != nil || len(more) == 0 {
			return c.full(path, data)
		}
		entries = slices.Concat(prev.entries, more)
	default:
		return c.full(path, data)
	}
	s := &snapshot{data: data, entries: entries}
	c.put(path, s)
	return s, nil
}

func (c *parseCache) full(path string, data []byte) (*snapshot, error) {
	entries, err := parseEntries(data)
	if err != nil {
		return nil, err
	}
	s := &snapshot{data: data, entries: entries}
	c.put(path, s)
	return s, nil
}

func extends(prev *snapshot, data []byte) bool {
	p := prev.data
	return len(prev.entries) > 0 && len(p) >= 2 && len(data) > len(p) &&
		p[len(p)-2] == '\n' && p[len(p)-1] == ']' &&
		bytes.HasPrefix(data, p[:len(p)-2]) && data[len(p)-2] == ','
}

func (c *parseCache) put(path string, s *snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*snapshot)
	}
	if _, ok := c.m[path]; !ok && len(c.m) >= maxCachedInboxes {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[path] = s
}

// withRead returns a copy of e whose "read" key is true, every other key
// and value unchanged and in place. A missing "read" key is added last.
func withRead(e *entry) (*entry, error) {
	dec := json.NewDecoder(bytes.NewReader(e.raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	b := []byte{'{'}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if key == "read" {
			val, found = json.RawMessage("true"), true
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendString(b, key)
		b = append(b, ':')
		b = append(b, val...)
	}
	if !found {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"read":true`...)
	}
	b = append(b, '}')
	ne := newEntry(b)
	if ne.err != nil {
		return nil, ne.err
	}
	return ne, nil
}
