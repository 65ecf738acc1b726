package atmclient

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTextBytes is the largest message text accepted, in bytes (1 MiB, the
// atm CLI's limit).
const MaxTextBytes = 1 << 20

// ValidateText reports whether text may be sent: not blank, valid UTF-8,
// free of NUL bytes and at most MaxTextBytes long. Errors wrap
// ErrInvalidText.
func ValidateText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return fmt.Errorf("%w: text is blank", ErrInvalidText)
	case len(text) > MaxTextBytes:
		return fmt.Errorf("%w: text is %d bytes, over the limit of %d bytes (1 MiB)", ErrInvalidText, len(text), MaxTextBytes)
	case strings.IndexByte(text, 0) >= 0:
		return fmt.Errorf("%w: text contains a NUL byte", ErrInvalidText)
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: text is not valid UTF-8", ErrInvalidText)
	}
	return nil
}

// SplitAddress splits a recipient "agent" or "agent@team" on its first '@'.
// team is "" when to has no '@'. Both parts are validated as names; an empty
// part is an error wrapping ErrInvalidAddress.
func SplitAddress(to string) (agent, team string, err error) {
	agent, team, found := strings.Cut(to, "@")
	if agent == "" || (found && team == "") {
		return "", "", fmt.Errorf("%w: %q: want agent or agent@team", ErrInvalidAddress, to)
	}
	if err := ValidateName("agent", agent); err != nil {
		return "", "", err
	}
	if found {
		if err := ValidateName("team", team); err != nil {
			return "", "", err
		}
	}
	return agent, team, nil
}

// Summarize returns the summary the atm CLI makes when none is given: the
// trimmed text, or when that is longer than 100 characters its first 100
// characters cut back to the last white space among them, plus "...".
func Summarize(text string) string {
	t := strings.TrimSpace(text)
	if utf8.RuneCountInString(t) <= 100 {
		return t
	}
	cut := 0
	for i := range t {
		if cut == 100 {
			cut = i
			break
		}
		cut++
	}
	head := t[:cut]
	if i := strings.LastIndexFunc(head, unicode.IsSpace); i > 0 {
		head = head[:i]
	}
	return strings.TrimRightFunc(head, unicode.IsSpace) + "..."
}

// SendRequest is a message to one agent.
type SendRequest struct {
	From    string // sender name (the identity); required
	Team    string // sender's team: written as source_team, and the recipient's team when To has none; required
	To      string // "agent" or "agent@team"; the agent must be a member of that team
	Text    string // see ValidateText
	Summary string // optional: "" means Summarize(Text), or none for a protocol frame (see Message.IsProtocol)
}

// Send appends a message to the recipient's inbox and returns it as written
// (with its new message_id and timestamp).
func (c *Client) Send(ctx context.Context, req SendRequest) (Message, error) {
	agent, team, err := SplitAddress(req.To)
	if err != nil {
		return Message{}, fmt.Errorf("send: %w", err)
	}
	if team == "" {
		team = req.Team
	}
	m, err := c.newMessage(req.From, req.Team, req.Text, req.Summary)
	if err != nil {
		return Message{}, fmt.Errorf("send: %w", err)
	}
	cfg, err := c.TeamConfig(team)
	if err != nil {
		return Message{}, fmt.Errorf("send: %w", err)
	}
	if _, ok := cfg.Member(agent); !ok {
		return Message{}, fmt.Errorf("send: %w: %q is not in team %q", ErrNotMember, agent, team)
	}
	if err := c.appendMessage(ctx, team, agent, m); err != nil {
		return Message{}, fmt.Errorf("send to %s@%s: %w", agent, team, err)
	}
	return m, nil
}

// BroadcastRequest is a message to every member of a team but the sender.
type BroadcastRequest struct {
	From    string // sender name; required
	Team    string // sender's team (source_team); required
	ToTeam  string // optional: "" means Team
	Text    string
	Summary string // optional: "" means Summarize(Text), or none for a protocol frame (see Message.IsProtocol)
}

// BroadcastResult says what Broadcast wrote.
type BroadcastResult struct {
	Message    Message  // the message, with the message_id shared by every copy
	Recipients []string // the members whose inbox received it
}

// Broadcast appends one message, with one message_id, to the inbox of every
// member of the team whose name differs from the sender. A failure for one
// member does not stop the others; the error joins every failure and
// Recipients lists the members reached.
func (c *Client) Broadcast(ctx context.Context, req BroadcastRequest) (BroadcastResult, error) {
	team := req.ToTeam
	if team == "" {
		team = req.Team
	}
	m, err := c.newMessage(req.From, req.Team, req.Text, req.Summary)
	if err != nil {
		return BroadcastResult{}, fmt.Errorf("broadcast: %w", err)
	}
	cfg, err := c.TeamConfig(team)
	if err != nil {
		return BroadcastResult{}, fmt.Errorf("broadcast: %w", err)
	}
	res := BroadcastResult{Message: m, Recipients: []string{}}
	var errs []error
	for _, mem := range cfg.Members {
		if mem.Name == req.From {
			continue
		}
		if err := c.appendMessage(ctx, team, mem.Name, m); err != nil {
			errs = append(errs, fmt.Errorf("broadcast to %q: %w", mem.Name, err))
			continue
		}
		res.Recipients = append(res.Recipients, mem.Name)
	}
	return res, errors.Join(errs...)
}

func (c *Client) newMessage(from, team, text, summary string) (Message, error) {
	if err := ValidateName("identity", from); err != nil {
		return Message{}, err
	}
	if err := ValidateName("team", team); err != nil {
		return Message{}, err
	}
	if err := ValidateText(text); err != nil {
		return Message{}, err
	}
	_, frame := protocolFields(text)
	if summary == "" && !frame {
		// A frame gets none: Claude Code writes its own frames (an
		// idle_notification, say) without one, and its lead shows a frame
		// that has a summary as plain text, not as what the frame means
		// ("Teammate @x finished").
		summary = Summarize(text)
	} else if strings.IndexByte(summary, 0) >= 0 || !utf8.ValidString(summary) {
		return Message{}, fmt.Errorf("%w: summary contains a NUL byte or invalid UTF-8", ErrInvalidText)
	}
	return Message{
		From:       from,
		SourceTeam: team,
		Text:       text,
		Timestamp:  c.now().UTC().Format(TimestampLayout),
		Summary:    summary,
		MessageID:  newUUID(),
		Extra:      map[string]json.RawMessage{},
	}, nil
}

// appendMessage appends m to an inbox unless a message with its id (ID:
// message_id or msg_id) is already there.
func (c *Client) appendMessage(ctx context.Context, team, agent string, m Message) error {
	path, err := c.teamInbox(team, agent)
	if err != nil {
		return err
	}
	e, err := entryFor(m)
	if err != nil {
		return err
	}
	_, err = c.update(ctx, path, func(cur []*entry) ([]*entry, []*entry, error) {
		for _, x := range cur {
			if x.err == nil && m.ID() != "" && x.key == e.key {
				return nil, nil, nil
			}
		}
		return append(cur[:len(cur):len(cur)], e), []*entry{e}, nil
	})
	return err
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
