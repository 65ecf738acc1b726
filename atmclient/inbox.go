package atmclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
	// root, when not 0, is the ident of a snapshot whose file this one's
	// extends by appended elements; its entries are the first rootLen.
	root    uint64
	rootLen int

	once   sync.Once
	idx    map[string]*entry // see index
	idOnce sync.Once
	id     uint64 // see ident
}

var snapshotIDs atomic.Uint64

// ident returns a number that identifies s among the snapshots of this
// process.
func (s *snapshot) ident() uint64 {
	s.idOnce.Do(func() { s.id = snapshotIDs.Add(1) })
	return s.id
}

// invalid returns the index of the first element that is not valid JSON,
// or -1.
func (s *snapshot) invalid() int {
	return slices.IndexFunc(s.entries, func(e *entry) bool { return !e.valid })
}

// parseEntries splits data into entries, reusing the entry of every
// element whose bytes are a key of known. An error means data is not a JSON
// array whose element boundaries can be found.
func parseEntries(data []byte, known map[string]*entry) ([]*entry, error) {
	elems, err := jsonarray.Split(data)
	if err != nil {
		return nil, err
	}
	entries := make([]*entry, len(elems))
	for i, el := range elems {
		if e, ok := known[string(el)]; ok {
			entries[i] = e
			continue
		}
		entries[i] = newEntry(el)
	}
	return entries, nil
}

// index maps the bytes of each element of s, as they appear in s.data, to
// its entry. It is built on first use.
func (s *snapshot) index() map[string]*entry {
	s.once.Do(func() {
		elems, err := jsonarray.Split(s.data)
		if err != nil || len(elems) != len(s.entries) {
			return
		}
		s.idx = make(map[string]*entry, len(elems))
		for i, el := range elems {
			s.idx[string(el)] = s.entries[i]
		}
	})
	return s.idx
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

// parseCache remembers the last snapshot of each inbox so that a new
// version of the file is parsed only where it changed. A file ending in
// "\n]" whose bytes before that are a prefix of the new file, which
// continues with ",", holds the old elements followed by the elements of
// "[" + the rest; every writer of the pretty format appends that way. Any
// other change is split into elements and only elements whose bytes are new
// are decoded.
type parseCache struct {
	mu sync.Mutex
	m  map[string]*snapshot
}

const maxCachedInboxes = 64

func (c *parseCache) parse(path string, data []byte) (*snapshot, error) {
	c.mu.Lock()
	prev := c.m[path]
	c.mu.Unlock()
	if prev != nil && bytes.Equal(prev.data, data) {
		return prev, nil
	}
	s, err := parseFrom(prev, data)
	if err != nil {
		return nil, err
	}
	c.put(path, s)
	return s, nil
}

// parseFrom parses data, reusing what it can of prev (which may be nil):
// when data is prev's file with elements appended only the new elements are
// parsed; otherwise every element whose bytes are unchanged keeps its entry.
func parseFrom(prev *snapshot, data []byte) (*snapshot, error) {
	var known map[string]*entry
	if prev != nil {
		if extends(prev, data) {
			tail := append([]byte{'['}, data[len(prev.data)-1:]...)
			if more, err := parseEntries(tail, nil); err == nil && len(more) > 0 {
				root, rootLen := prev.root, prev.rootLen
				if root == 0 {
					root, rootLen = prev.ident(), len(prev.entries)
				}
				return &snapshot{data: data, entries: slices.Concat(prev.entries, more), root: root, rootLen: rootLen}, nil
			}
		}
		known = prev.index()
	}
	entries, err := parseEntries(data, known)
	if err != nil {
		return nil, err
	}
	return &snapshot{data: data, entries: entries}, nil
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
