package atmclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
)

// The journal is the sidecar inboxes/{agent}.journal that lets locked
// writers repair what a lock-ignoring writer overwrote (package
// documentation, "The journal"). It is read and written only under the
// inbox lock. Each line is one record,
//
//	{"at":"2026-03-18T20:21:33.123456789Z","message":{…}}
//
// the instant the record was written and the message element as it was
// put into the inbox (compact JSON). The last record of a message (by Key)
// is its state; a record is live while it is younger than journalRetention
// and within the newest journalMaxLive bytes of records.
var (
	// journalRetention is how long a record protects its message.
	journalRetention = 10 * time.Minute
	// journalMaxLive caps the bytes of live records, newest first; the
	// newest record is live whatever its size.
	journalMaxLive = 4 << 20
	// journalCompactMin is the size below which a journal is never
	// compacted. Above it, it is compacted when less than half of it is live.
	journalCompactMin = 256 << 10
)

// tailLen is how many bytes before the parsed end of a journal the cache
// compares to recognize the file it parsed.
const tailLen = 64

// jrecord is one parsed journal record.
type jrecord struct {
	at   time.Time
	e    *entry
	line int    // bytes of its line, newline included
	seen uint64 // reconcile pass that found its message in the inbox
}

// journal is what a Client knows of one journal file: its records up to
// size, the end of its last complete line. It is used under the inbox lock
// only, taken out of the Client's cache while in use.
type journal struct {
	path  string
	fi    os.FileInfo // the file parsed; nil when there was none
	size  int64
	tail  []byte     // the up to tailLen bytes before size
	torn  bool       // the file goes on past size with an incomplete line
	recs  []*jrecord // in file order; nil where a later record supersedes it
	byKey map[string]int
	pass  uint64
	// verified is the ident of an inbox snapshot known to hold the first
	// verifiedN records as recorded (0: none).
	verified  uint64
	verifiedN int
}

// journalCache keeps the parsed journal of recently written inboxes.
type journalCache struct {
	mu sync.Mutex
	m  map[string]*journal
}

const maxCachedJournals = 16

func (c *journalCache) take(path string) *journal {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.m[path]
	delete(c.m, path)
	return j
}

func (c *journalCache) put(j *journal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*journal)
	}
	if len(c.m) >= maxCachedJournals {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[j.path] = j
}

// openJournal returns the journal at path brought up to date: from the
// cached parse when the file is the one parsed then (same inode, same bytes
// before the parsed end), reading only what was appended since; from
// scratch otherwise. A missing file is an empty journal. Records of
// messages among known (the inbox elements appended since the last write,
// usually the messages those records describe) reuse their entries.
func (c *Client) openJournal(path string, known []*entry) (*journal, error) {
	j := c.journals.take(path)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &journal{path: path, byKey: map[string]int{}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if j == nil || !j.same(f, fi) {
		j = &journal{path: path, byKey: map[string]int{}}
	}
	j.fi = fi
	if fi.Size() == j.size {
		j.torn = false
		return j, nil
	}
	data := make([]byte, fi.Size()-j.size)
	n, err := f.ReadAt(data, j.size)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	data = data[:n]
	end := bytes.LastIndexByte(data, '\n') + 1
	bad := 0
	var byRaw map[string]*entry
	if len(known) > 0 {
		byRaw = make(map[string]*entry, len(known))
		for _, e := range known {
			byRaw[string(e.raw)] = e
		}
	}
	for line := range bytes.Lines(data[:end]) {
		if !j.addLine(line, byRaw) {
			bad++
		}
	}
	j.advance(data[:end])
	j.torn = end < len(data)
	if bad > 0 || j.torn {
		c.log.Debug("inbox journal has unreadable records", "path", path, "records", bad, "incomplete", j.torn)
	}
	return j, nil
}

// same reports whether f is the file j parsed, unchanged up to j.size.
func (j *journal) same(f *os.File, fi os.FileInfo) bool {
	if j.fi == nil || !os.SameFile(j.fi, fi) || fi.Size() < j.size {
		return false
	}
	if len(j.tail) == 0 {
		return j.size == 0
	}
	b := make([]byte, len(j.tail))
	_, err := f.ReadAt(b, j.size-int64(len(b)))
	return err == nil && bytes.Equal(b, j.tail)
}

// advance notes that data was parsed (or written) after j.size.
func (j *journal) advance(data []byte) {
	j.size += int64(len(data))
	if len(data) >= tailLen {
		j.tail = bytes.Clone(data[len(data)-tailLen:])
		return
	}
	t := append(j.tail, data...)
	j.tail = bytes.Clone(t[max(0, len(t)-tailLen):])
}

type recordJSON struct {
	At      time.Time       `json:"at"`
	Message json.RawMessage `json:"message"`
}

// addLine parses one line and adds its record; false means the line is not
// a record of a message. A message whose canonical bytes are a key of
// byRaw gets that entry.
func (j *journal) addLine(line []byte, byRaw map[string]*entry) bool {
	at, msg, ok := splitRecord(line)
	if !ok {
		var r recordJSON
		if json.Unmarshal(line, &r) != nil {
			return false
		}
		at, msg = r.At, r.Message
	}
	var buf bytes.Buffer
	if json.Indent(&buf, msg, "  ", "  ") != nil {
		return false
	}
	e := byRaw[string(buf.Bytes())]
	if e == nil {
		if e = newEntry(msg); e.err != nil {
			return false
		}
	}
	j.add(&jrecord{at: at, e: e, line: len(line)})
	return true
}

// splitRecord takes a line apart as encodeRecord writes it, without
// checking the message; ok is false for any other layout.
func splitRecord(line []byte) (at time.Time, msg []byte, ok bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte(`{"at":"`))
	if !ok {
		return at, nil, false
	}
	ts, rest, ok := bytes.Cut(rest, []byte(`","message":`))
	if !ok {
		return at, nil, false
	}
	if msg, ok = bytes.CutSuffix(rest, []byte("}")); !ok {
		return at, nil, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(ts))
	return at, msg, err == nil
}

func (j *journal) add(r *jrecord) {
	if i, ok := j.byKey[r.e.key]; ok {
		j.recs[i] = nil
	}
	j.byKey[r.e.key] = len(j.recs)
	j.recs = append(j.recs, r)
}

// encodeRecord appends the line of a record of e made at at.
func encodeRecord(b []byte, at time.Time, e *entry) []byte {
	b = append(b, `{"at":"`...)
	b = at.UTC().AppendFormat(b, TimestampLayout)
	b = append(b, `","message":`...)
	var buf bytes.Buffer
	json.Compact(&buf, e.raw) // e.raw is valid JSON: entries of messages are
	b = append(b, buf.Bytes()...)
	return append(b, "}\n"...)
}

// cutoff returns the index of the oldest record that may be live at now:
// every record at or after it that is not superseded is live.
func (j *journal) cutoff(now time.Time) int {
	oldest := now.Add(-journalRetention)
	n := 0
	i := len(j.recs)
	for k := len(j.recs) - 1; k >= 0; k-- {
		r := j.recs[k]
		if r == nil {
			continue
		}
		if r.at.Before(oldest) || (i < len(j.recs) && n+r.line > journalMaxLive) {
			break
		}
		n += r.line
		i = k
	}
	return i
}

// reconcile compares the live records with the inbox snap. Every message
// with a live record that the inbox lacks is put back as recorded, and a
// message whose live record is read but which the inbox holds unread is
// marked read again. It returns the reconciled entries (a new slice when
// anything changed; snap is not modified) and the entries it restored.
func (j *journal) reconcile(snap *snapshot, now time.Time) (next, restored []*entry) {
	cur := snap.entries
	cut := j.cutoff(now)
	if cut == len(j.recs) || j.holds(snap, cut) {
		return cur, nil
	}
	j.pass++
	next = cur
	for i, e := range cur {
		if e.err != nil {
			continue
		}
		k, ok := j.byKey[e.key]
		if !ok || k < cut {
			continue
		}
		r := j.recs[k]
		r.seen = j.pass
		if r.e.msg.Read && !e.msg.Read {
			ne, err := withRead(e)
			if err != nil {
				continue
			}
			if len(restored) == 0 {
				next = append([]*entry(nil), cur...)
			}
			next[i] = ne
			restored = append(restored, ne)
		}
	}
	var missing []*entry
	for _, r := range j.recs[cut:] {
		if r != nil && r.seen != j.pass {
			missing = append(missing, r.e)
		}
	}
	if len(missing) > 0 {
		next, _ = mergeEntries(next, missing)
		restored = append(restored, missing...)
	}
	return next, restored
}

// holds reports, without looking at every entry, whether snap holds every
// record from cut on as recorded: it is the snapshot last verified or its
// file with elements appended, and every live record added since is among
// those elements. False means "do not know".
func (j *journal) holds(snap *snapshot, cut int) bool {
	if j.verified == 0 || j.verifiedN > len(j.recs) {
		return false
	}
	var added []*entry
	switch {
	case snap.ident() == j.verified:
	case snap.root == j.verified:
		added = snap.entries[snap.rootLen:]
	default:
		return false
	}
	var want map[string]*jrecord
	for _, r := range j.recs[max(cut, j.verifiedN):] {
		if r != nil {
			if want == nil {
				want = make(map[string]*jrecord)
			}
			want[r.e.key] = r
		}
	}
	for _, e := range added {
		if r, ok := want[e.key]; ok && e.err == nil && (e.msg.Read || !r.e.msg.Read) {
			delete(want, e.key)
		}
	}
	return len(want) == 0
}

// verify notes that snap, the inbox as last written or read under the
// lock, holds every record of j as recorded.
func (j *journal) verify(snap *snapshot) {
	j.verified, j.verifiedN = snap.ident(), len(j.recs)
}

// record appends records of entries (messages only) made at now to the
// journal and fsyncs it, or, when the journal has grown to more than twice
// its live records, rewrites it with only its live records and these.
func (j *journal) record(now time.Time, entries []*entry) error {
	var b []byte
	var recs []*jrecord
	for _, e := range entries {
		if e.err != nil {
			continue
		}
		n := len(b)
		b = encodeRecord(b, now, e)
		recs = append(recs, &jrecord{at: now, e: e, line: len(b) - n})
	}
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		j.add(r)
	}
	cut := j.cutoff(now)
	live := 0
	for _, r := range j.recs[cut:] {
		if r != nil {
			live += r.line
		}
	}
	if total := j.size + int64(len(b)); total > int64(journalCompactMin) && total > 2*int64(live) {
		return j.compact(cut)
	}
	if j.torn {
		b = append([]byte{'\n'}, b...)
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		j.fi = nil // what is on disk is unknown: parse it again next time
		return err
	}
	err = f.Sync()
	if err == nil {
		j.fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		j.fi = nil
		return err
	}
	if j.torn {
		// The incomplete line is a line of its own now, before b.
		j.size, j.tail, j.torn = j.fi.Size()-int64(len(b)), nil, false
		if len(b) < tailLen {
			j.fi = nil // cannot recognize the file: parse it again next time
		}
	}
	j.advance(b)
	return nil
}

// compact replaces the journal file by one holding the live records from
// cut on, written as a new file, fsynced and renamed over the journal.
func (j *journal) compact(cut int) error {
	var b []byte
	var kept []*jrecord
	for _, r := range j.recs[cut:] {
		if r != nil {
			b = encodeRecord(b, r.at, r.e)
			kept = append(kept, r)
		}
	}
	tmp := strings.TrimSuffix(j.path, ".journal") + ".journal.new"
	if err := fsx.WriteNew(tmp, b); err != nil {
		j.fi = nil
		return err
	}
	if err := os.Rename(tmp, j.path); err != nil {
		os.Remove(tmp)
		j.fi = nil
		return err
	}
	fi, err := os.Stat(j.path)
	if err != nil {
		j.fi = nil
		return err
	}
	*j = journal{path: j.path, fi: fi, byKey: make(map[string]int, len(kept)), pass: j.pass} // and nothing verified
	for _, r := range kept {
		j.add(r)
	}
	j.advance(b)
	return nil
}

// Repair puts back into team/agent's inbox, under the inbox lock, what a
// writer that ignores the lock overwrote with an older copy of the file:
// the messages this package wrote or merged there in the last ten minutes,
// and the read flags it set (see the package documentation, "The
// journal"). Every locked write (Send, Broadcast, MarkRead) repairs the
// same way before its own change; Repair is for when there is nothing else
// to write. It returns how many messages it restored.
func (c *Client) Repair(ctx context.Context, team, agent string) (int, error) {
	path, err := c.teamInbox(team, agent)
	if err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	n, err := c.update(ctx, path, func(cur []*entry) ([]*entry, []*entry, error) { return nil, nil, nil })
	if err != nil {
		return 0, fmt.Errorf("repair %s@%s: %w", agent, team, err)
	}
	return n, nil
}
