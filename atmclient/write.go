package atmclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
)

// tornRetries are the pauses before re-reading a file that does not parse.
// A writer that ignores the lock (Claude Code) truncates and rewrites the
// inbox in place, so a reader can catch it empty or half written; such a
// state lasts microseconds, a corrupt file stays.
var tornRetries = []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}

// maxMergeRounds bounds the swap-and-merge loop when lock-ignoring writers
// keep rewriting the inbox.
const maxMergeRounds = 16

// testHook, when set by tests, is called at the steps of a write: "swap"
// just before the inbox is replaced (exchange or first rename), "checked"
// after the displaced file was read.
var testHook func(step string)

func hook(step string) {
	if testHook != nil {
		testHook(step)
	}
}

// load reads and parses the file at path. A missing file is an empty inbox
// with exists false. A file that is empty or not a JSON array is re-read
// after the tornRetries pauses; if it stays empty it is an empty inbox, if
// it stays unparsable the error wraps ErrCorruptInbox.
func (c *Client) load(ctx context.Context, path string) (snap *snapshot, exists bool, err error) {
	for attempt := 0; ; attempt++ {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return &snapshot{}, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read inbox: %w", err)
		}
		empty := len(bytes.TrimSpace(data)) == 0
		var perr error
		if !empty {
			snap, perr = c.cache.parse(path, data)
			if perr == nil {
				return snap, true, nil
			}
		}
		if attempt == len(tornRetries) {
			if empty {
				return &snapshot{data: data}, true, nil
			}
			return nil, true, fmt.Errorf("%w: %s: %v", ErrCorruptInbox, path, perr)
		}
		if err := sleep(ctx, tornRetries[attempt]); err != nil {
			return nil, false, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// mutation computes the new entries of an inbox from the current ones; it
// must not modify cur. written lists the entries it added or changed (they
// are recorded in the journal); none means there is nothing to write.
type mutation func(cur []*entry) (next, written []*entry, err error)

// update applies mutate to the inbox at path under the locks of both other
// writers (see the package documentation, "Design notes" and "The
// journal"):
//
//  1. flock {agent}.lock (the atm CLI's lock); create the inbox as "[]"
//     if it is missing; mkdir {agent}.json.lock (Claude Code's lock);
//  2. read the inbox (missing = []), and finish the last journaled write
//     if its writer died before its exchange;
//  3. mutate;
//  4. write {agent}.tmp as a new file and fsync it;
//  5. record the hash of that file and the restored and written messages
//     in the journal, fsync it;
//  6. exchange the tmp file with the inbox (rename when there was none);
//  7. compare the displaced file with what was read; if a writer that
//     took no lock changed it, merge its new messages and go to 4;
//  8. remove the tmp file, rmdir the lock directory, unlock.
//
// It returns how many messages step 2 restored.
func (c *Client) update(ctx context.Context, path string, mutate mutation) (restored int, err error) {
	dir := filepath.Dir(path)
	base := strings.TrimSuffix(path, ".json")
	lockPath, tmpPath, jPath := base+".lock", base+".tmp", base+".journal"
	// Only the inboxes directory is made: a team directory that is gone
	// (Claude Code deletes its session team when the lead exits) stays
	// gone.
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("%w: no directory %s", ErrTeamNotFound, filepath.Dir(dir))
		}
		return 0, fmt.Errorf("create inboxes directory: %w", err)
	}
	unlock, err := c.lockBoth(ctx, lockPath, path+".lock", func() error { return createEmpty(path) })
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: the team directory of %s is gone: %v", ErrTeamNotFound, path, err)
	}
	if err != nil {
		return 0, fmt.Errorf("lock inbox: %w", err)
	}
	defer unlock()

	snap, exists, err := c.load(ctx, path)
	if err != nil {
		return 0, err
	}
	if i := snap.invalid(); i >= 0 {
		return 0, fmt.Errorf("%w: %s: element %d is not valid JSON; not rewriting it", ErrCorruptInbox, path, i)
	}
	cur, fixed := c.replay(jPath, tmpPath, snap.entries)
	next, written, err := mutate(cur)
	if err != nil {
		return 0, err
	}
	if len(written) == 0 {
		if len(fixed) == 0 {
			return 0, nil
		}
		next = cur
	}
	if len(fixed) > 0 {
		c.log.Info("finished a write whose writer died before replacing the inbox", "path", path, "restored", len(fixed))
	}
	record := slices.Concat(fixed, written)
	out := encodeEntries(next)
	wrote := func() { c.cache.put(path, &snapshot{data: out, entries: next}) }
	// prev is what the exchange should displace; known is false when we
	// did not read what is there (the inbox appeared after our read).
	prev, known := snap, exists
	defer os.Remove(tmpPath)
	for round := 0; ; round++ {
		if err := fsx.WriteNew(tmpPath, out); err != nil {
			return 0, fmt.Errorf("write inbox: %w", err)
		}
		c.journal(jPath, out, record)
		if !exists {
			hook("swap")
			err := fsx.RenameNoReplace(tmpPath, path)
			switch {
			case err == nil:
				wrote()
				if err := fsx.SyncDir(dir); err != nil {
					c.log.Warn("inbox created but its directory was not synced", "path", path, "err", err)
				}
				return len(fixed), nil
			case errors.Is(err, errors.ErrUnsupported):
				return len(fixed), c.renameFallback(tmpPath, path, wrote)
			case !errors.Is(err, fs.ErrExist):
				return 0, fmt.Errorf("write inbox: %w", err)
			}
			// A writer that took no lock created the inbox after we read
			// it: swap, then merge what it wrote.
			exists, known = true, false
		}
		hook("swap")
		if err := fsx.Exchange(tmpPath, path); err != nil {
			if errors.Is(err, errors.ErrUnsupported) {
				return len(fixed), c.renameFallback(tmpPath, path, wrote)
			}
			return 0, fmt.Errorf("write inbox: %w", err)
		}
		displaced, err := os.ReadFile(tmpPath)
		hook("checked")
		if err != nil {
			return 0, fmt.Errorf("write inbox: check displaced file: %w", err)
		}
		if known && bytes.Equal(displaced, prev.data) {
			wrote()
			return len(fixed), nil
		}
		if !known {
			prev = nil
		}
		theirs, ok := c.parseDisplaced(ctx, tmpPath, prev, displaced)
		if !ok {
			return len(fixed), nil
		}
		merged, added := mergeEntries(next, theirs)
		if len(added) == 0 {
			wrote()
			return len(fixed), nil
		}
		if round+1 == maxMergeRounds {
			c.keepAside(tmpPath, "inbox keeps changing without the lock; kept the last concurrent write aside unmerged")
			return len(fixed), nil
		}
		c.log.Info("merged messages written without the inbox lock", "path", path, "added", len(added), "round", round)
		record = added
		prev, known = &snapshot{data: out, entries: next}, true
		next, out = merged, encodeEntries(merged)
	}
}

// journal records, before the exchange, that the inbox file out, now at
// {agent}.tmp, adds or changes entries. A journal that cannot be written
// does not stop the write; only a crash before the exchange then loses
// the write.
func (c *Client) journal(jPath string, out []byte, entries []*entry) {
	hook("journal")
	if err := writeJournal(jPath, out, entries); err != nil {
		c.log.Warn("cannot write the inbox journal; a crash before the exchange would lose this write", "path", jPath, "err", err)
	}
	hook("journaled")
}

// renameFallback replaces the inbox by a plain rename on file systems that
// cannot exchange; concurrent lock-ignoring writes cannot be merged there.
func (c *Client) renameFallback(tmpPath, path string, wrote func()) error {
	if err := os.Rename(tmpPath, path); err != nil {
		return fmt.Errorf("write inbox: %w", err)
	}
	wrote()
	c.log.Debug("file system cannot exchange files; replaced inbox by rename", "path", path)
	return nil
}

// parseDisplaced parses the displaced inbox, re-reading it while a
// lock-ignoring writer may still be writing into it; base, when not nil, is
// the file the displaced one probably extends. An empty file has
// nothing to merge. A file that stays unparsable is kept next to the inbox
// as {agent}.json.unmerged-{unix-nanos} and ok is false.
func (c *Client) parseDisplaced(ctx context.Context, tmpPath string, base *snapshot, data []byte) (entries []*entry, ok bool) {
	for attempt := 0; ; attempt++ {
		empty := len(bytes.TrimSpace(data)) == 0
		if !empty {
			s, err := parseFrom(base, data)
			if err == nil && s.invalid() < 0 {
				return s.entries, true
			}
		}
		if attempt == len(tornRetries) {
			if empty {
				return nil, true
			}
			break
		}
		if sleep(ctx, tornRetries[attempt]) != nil {
			break
		}
		if d, err := os.ReadFile(tmpPath); err == nil {
			data = d
		}
	}
	c.keepAside(tmpPath, "kept an unparsable concurrent write to the inbox aside")
	return nil, false
}

// keepAside renames the displaced inbox at tmpPath to
// {agent}.json.unmerged-{unix-nanos} so that what could not be merged is
// not destroyed.
func (c *Client) keepAside(tmpPath, why string) {
	aside := strings.TrimSuffix(tmpPath, ".tmp") + fmt.Sprintf(".json.unmerged-%d", time.Now().UnixNano())
	if err := os.Rename(tmpPath, aside); err != nil {
		c.log.Warn("could not keep a concurrent write to the inbox aside", "path", tmpPath, "err", err)
		return
	}
	c.log.Warn(why, "path", aside)
}

// mergeEntries returns ours plus every entry of theirs it lacks: messages by
// Key (message_id, or from+timestamp+text for id-less ones), other elements
// by their bytes. When something was added the result is sorted stably by
// timestamp instant. It also returns the entries it added.
func mergeEntries(ours, theirs []*entry) (merged, added []*entry) {
	seen := make(map[string]bool, len(ours))
	for _, e := range ours {
		seen[mergeKey(e)] = true
	}
	merged = slices.Clip(ours)
	for _, e := range theirs {
		if k := mergeKey(e); !seen[k] {
			seen[k] = true
			merged = append(merged, e)
			added = append(added, e)
		}
	}
	if len(added) > 0 {
		slices.SortStableFunc(merged, func(a, b *entry) int { return a.at.Compare(b.at) })
	}
	return merged, added
}

func mergeKey(e *entry) string {
	if e.err == nil {
		return e.key
	}
	return "raw:" + string(e.raw)
}
