package atmclient

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// An emulation of Claude Code 2.1.332's inbox reader and writer, written
// from what was measured of it (its inbox format, its lock directory and
// how its reader marks mail read):
//
//   - its lock is a directory "<file>.lock" made with mkdir by a
//     proper-lockfile clone: EEXIST means held; a directory older than 10 s
//     is stale; the inbox options retry 10 times with waits of 5 to 100 ms
//     (node-retry: 5, 10, 20, 40, 80, then 100 ms), then give up (ELOCKED);
//   - the inbox must exist before it is locked: it is created with "[]"
//     and O_EXCL first;
//   - writes go to a temporary file that is renamed over the inbox;
//   - the reader takes unread entries without a lock, delivers them, then
//     "marks them read": under the lock it re-reads the file and writes
//     back only the entries that are unread and were not delivered
//     (identity from|timestamp|text); read entries disappear too;
//   - SendMessage appends {from,text,summary,timestamp,msgV:1,msg_id,
//     type:"message",read:false} under the lock.

// errClaudeLocked is proper-lockfile's ELOCKED: the lock stayed held
// through every retry.
var errClaudeLocked = errors.New("lock file is already being held (ELOCKED)")

// claudeLock takes the lock directory dir as Claude Code's inbox and team
// file writers do, and returns the release (rmdir).
func claudeLock(ctx context.Context, dir string) (unlock func(), err error) {
	wait := 5 * time.Millisecond
	for retry := 0; ; retry++ {
		err := os.Mkdir(dir, 0o777)
		if err == nil {
			return func() { os.Remove(dir) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > 10*time.Second {
			os.Remove(dir)
			continue
		}
		if retry == 10 {
			return nil, errClaudeLocked
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// claudeEntry is an inbox entry as Claude Code's schema keeps it (unknown
// keys pass through).
type claudeEntry map[string]any

func (e claudeEntry) str(k string) string { s, _ := e[k].(string); return s }

// identity is Claude Code's n9: from|timestamp|text.
func (e claudeEntry) identity() string {
	return e.str("from") + "|" + e.str("timestamp") + "|" + e.str("text")
}

func (e claudeEntry) valid() bool {
	_, f := e["from"].(string)
	_, t := e["text"].(string)
	_, ts := e["timestamp"].(string)
	return f && t && ts
}

// claudeReadInbox reads an inbox as Claude Code does: a file that is not a
// JSON array is empty; schema-invalid entries are dropped.
func claudeReadInbox(path string) ([]claudeEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var all []claudeEntry
	if json.Unmarshal(data, &all) != nil {
		return nil, nil
	}
	var out []claudeEntry
	for _, e := range all {
		if e.valid() {
			out = append(out, e)
		}
	}
	return out, nil
}

// claudeAtomicWrite writes entries as JSON.stringify(…, null, 2) to a
// temporary file and renames it over path.
func claudeAtomicWrite(path string, entries []claudeEntry) error {
	if entries == nil {
		entries = []claudeEntry{}
	}
	out, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp.%d.%s", path, os.Getpid(), rand.Text()[:8])
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// claudeEnsure creates the inbox with "[]" unless it exists.
func claudeEnsure(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	f.Write([]byte("[]"))
	return f.Close()
}

// claudeSend appends a message to the inbox at path as SendMessage does.
func claudeSend(ctx context.Context, path, from, text string) error {
	if err := claudeEnsure(path); err != nil {
		return err
	}
	unlock, err := claudeLock(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := claudeReadInbox(path)
	if err != nil {
		return err
	}
	entries = append(entries, claudeEntry{
		"from": from, "text": text, "summary": text,
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"msgV":      1, "msg_id": newUUID(), "type": "message", "read": false,
	})
	return claudeAtomicWrite(path, entries)
}

// claudeReader is one poll of Claude Code's inbox reader: it returns the
// texts it delivered. work is the time between the unlocked read and the
// locked mark, when Claude Code hands the batch to the session. When the
// mark cannot take the lock the batch stays unread and, like Claude Code's
// in-memory set, pending suppresses its re-delivery until a mark succeeds.
type claudeReader struct {
	path    string
	work    time.Duration
	pending map[string]bool // identities delivered but not yet pruned
}

func (r *claudeReader) poll(ctx context.Context) (delivered []string, err error) {
	entries, err := claudeReadInbox(r.path)
	if err != nil {
		return nil, err
	}
	if r.pending == nil {
		r.pending = map[string]bool{}
	}
	batch := map[string]bool{}
	for _, e := range entries {
		if read, _ := e["read"].(bool); read {
			continue
		}
		id := e.identity()
		batch[id] = true
		if !r.pending[id] {
			r.pending[id] = true
			delivered = append(delivered, e.str("text"))
		}
	}
	if len(batch) == 0 {
		return delivered, nil
	}
	time.Sleep(r.work)
	if err := claudeEnsure(r.path); err != nil {
		return delivered, err
	}
	unlock, err := claudeLock(ctx, r.path+".lock")
	if errors.Is(err, errClaudeLocked) {
		return delivered, nil // "they stay unread and are retried next poll"
	}
	if err != nil {
		return delivered, err
	}
	defer unlock()
	now, err := claudeReadInbox(r.path)
	if err != nil {
		return delivered, err
	}
	var keep []claudeEntry
	for _, e := range now {
		if read, _ := e["read"].(bool); !read && !batch[e.identity()] {
			keep = append(keep, e)
		}
	}
	if err := claudeAtomicWrite(r.path, keep); err != nil {
		return delivered, err
	}
	for id := range batch {
		delete(r.pending, id)
	}
	return delivered, nil
}

// claudeInboxTexts returns the texts of the entries of the inbox at path.
func claudeInboxTexts(path string) ([]string, error) {
	entries, err := claudeReadInbox(path)
	var texts []string
	for _, e := range entries {
		texts = append(texts, e.str("text"))
	}
	return texts, err
}
