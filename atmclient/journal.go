package atmclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// The journal is the sidecar inboxes/{agent}.journal that lets the next
// locked writer finish a write whose writer was killed before its exchange
// (package documentation, "The journal"). It is read and written only
// under the inbox locks, and holds one line: the record of the last write,
//
//	{"at":"2026-03-18T20:21:33.123456789Z","file":"<hash>","messages":[{…},…]}
//
// the instant it was written, the hash of the new inbox file the writer
// had just written to {agent}.tmp, and the messages the write added or
// changed (compact JSON, as they were put in the file).

// journalRecord is the decoded journal line.
type journalRecord struct {
	At       time.Time         `json:"at"`
	File     string            `json:"file"`
	Messages []json.RawMessage `json:"messages"`
}

// fileHash identifies the bytes of an inbox file in a journal record.
func fileHash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:16])
}

// writeJournal replaces the journal at jPath with the record of a write of
// the inbox file out that adds or changes entries, and fsyncs it.
func writeJournal(jPath string, out []byte, entries []*entry) error {
	b := []byte(`{"at":"`)
	b = time.Now().UTC().AppendFormat(b, TimestampLayout)
	b = append(b, `","file":"`...)
	b = append(b, fileHash(out)...)
	b = append(b, `","messages":[`...)
	n := 0
	for _, e := range entries {
		if e.err != nil {
			continue
		}
		if n++; n > 1 {
			b = append(b, ',')
		}
		var buf bytes.Buffer
		json.Compact(&buf, e.raw) // e.raw is valid JSON: entries of messages are
		b = append(b, buf.Bytes()...)
	}
	if n == 0 {
		return nil
	}
	b = append(b, "]}\n"...)
	f, err := os.OpenFile(jPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replay finishes the last journaled write if its writer died before the
// exchange: that is so exactly when the file at tmpPath is still the new
// inbox it recorded (after an exchange tmpPath holds the displaced old
// inbox, and after a finished write it is gone). Then every recorded
// message that cur lacks is put back, unless it was recorded read (a
// message marked read and then consumed stays consumed), and every
// recorded read mark is set again on a message cur holds unread. A
// recorded message whose exchange happened is never put back: if it is
// gone now, its reader consumed it. replay returns the entries to write
// (a new slice when anything changed) and those it restored.
func (c *Client) replay(jPath, tmpPath string, cur []*entry) (next, restored []*entry) {
	tmp, err := os.ReadFile(tmpPath)
	if err != nil {
		return cur, nil
	}
	line, err := os.ReadFile(jPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("cannot read the inbox journal", "path", jPath, "err", err)
		}
		return cur, nil
	}
	var rec journalRecord
	if json.Unmarshal(line, &rec) != nil {
		c.log.Debug("inbox journal record is incomplete; nothing to finish", "path", jPath)
		return cur, nil
	}
	if rec.File != fileHash(tmp) {
		return cur, nil
	}
	at := make(map[string]int, len(cur))
	for i, e := range cur {
		if e.err == nil {
			at[e.key] = i
		}
	}
	next = cur
	var missing []*entry
	for _, m := range rec.Messages {
		r := newEntry(m)
		if r.err != nil {
			continue
		}
		i, ok := at[r.key]
		switch {
		case !ok && !r.msg.Read:
			missing = append(missing, r)
		case ok && r.msg.Read && !cur[i].msg.Read:
			ne, err := withRead(cur[i])
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
	if len(missing) > 0 {
		next, _ = mergeEntries(next, missing)
		restored = append(restored, missing...)
	}
	return next, restored
}

// Repair finishes, under the inbox locks, a write to team/agent's inbox
// whose writer was killed between recording it in the journal and
// replacing the inbox (see the package documentation, "The journal").
// Every locked write (Send, Broadcast, MarkRead) does the same before its
// own change; Repair is for when there is nothing else to write. It
// returns how many messages it put back or marked read.
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
