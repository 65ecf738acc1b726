package atmclient

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"
)

// ReadOptions filters Read. The zero value returns every unread mail
// message.
type ReadOptions struct {
	All             bool      // include messages already read
	IncludeProtocol bool      // include Claude Code protocol messages (see Message.IsProtocol)
	Since           time.Time // optional: only messages at or after this instant; unparsable timestamps are left out
	From            string    // optional: only messages from this sender (name, or the name part of "name@team")
	Limit           int       // optional: at most this many, the oldest first; 0 means no limit
}

// ReadResult is what Read found.
type ReadResult struct {
	Messages []Message // in file order (oldest first)
	Problems []Problem // elements that are not messages; they stay in the file
}

// Problem is an inbox element that could not be read as a message.
type Problem struct {
	Index int   // position in the inbox array
	Err   error // what is wrong with it
}

// Read returns the messages of team/agent's inbox that pass opts, without
// marking them read (see MarkRead). A missing inbox is empty; a missing team
// is an error wrapping ErrTeamNotFound; a file that is not a JSON array is an
// error wrapping ErrCorruptInbox. Malformed elements are skipped and listed
// in Problems.
func (c *Client) Read(ctx context.Context, team, agent string, opts ReadOptions) (ReadResult, error) {
	path, err := c.teamInbox(team, agent)
	if err != nil {
		return ReadResult{}, fmt.Errorf("read: %w", err)
	}
	snap, _, err := c.load(ctx, path)
	if err != nil {
		return ReadResult{}, fmt.Errorf("read %s@%s: %w", agent, team, err)
	}
	res := ReadResult{Messages: []Message{}}
	for i, e := range snap.entries {
		if e.err != nil {
			res.Problems = append(res.Problems, Problem{Index: i, Err: e.err})
			continue
		}
		m := e.msg
		switch {
		case m.Read && !opts.All:
		case !opts.IncludeProtocol && m.IsProtocol():
		case !opts.Since.IsZero() && (e.at.IsZero() || e.at.Before(opts.Since)):
		case opts.From != "" && m.From != opts.From && !strings.HasPrefix(m.From, opts.From+"@"):
		case opts.Limit > 0 && len(res.Messages) >= opts.Limit:
		default:
			m.Extra = maps.Clone(m.Extra)
			res.Messages = append(res.Messages, m)
		}
	}
	if len(res.Problems) > 0 {
		c.log.Debug("inbox has elements that are not messages", "path", path, "count", len(res.Problems))
	}
	return res, nil
}

// Pending returns how many unread mail messages (protocol messages left
// out) team/agent's inbox holds, without marking anything.
func (c *Client) Pending(ctx context.Context, team, agent string) (int, error) {
	res, err := c.Read(ctx, team, agent, ReadOptions{})
	if err != nil {
		return 0, fmt.Errorf("pending: %w", err)
	}
	return len(res.Messages), nil
}

// MarkRead sets "read": true on every unread message of team/agent's inbox
// whose Key is among keys, under the inbox lock, leaving every other byte
// of those messages as it was. It returns how many messages it marked; keys
// that match nothing are ignored.
func (c *Client) MarkRead(ctx context.Context, team, agent string, keys ...string) (int, error) {
	path, err := c.teamInbox(team, agent)
	if err != nil {
		return 0, fmt.Errorf("mark read: %w", err)
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	marked := 0
	_, err = c.update(ctx, path, func(cur []*entry) ([]*entry, []*entry, error) {
		var next, written []*entry
		for i, e := range cur {
			if e.err != nil || e.msg.Read || !want[e.key] {
				continue
			}
			if next == nil {
				next = append([]*entry(nil), cur...)
			}
			ne, err := withRead(e)
			if err != nil {
				return nil, nil, err
			}
			next[i] = ne
			written = append(written, ne)
		}
		marked = len(written)
		return next, written, nil
	})
	if err != nil {
		return 0, fmt.Errorf("mark read %s@%s: %w", agent, team, err)
	}
	return marked, nil
}
