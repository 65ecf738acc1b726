package ccmsg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// Defaults for the zero values of Config.
const (
	// DefaultTimeout bounds one Send: the dial, the lines and the wait for
	// the peer's close.
	DefaultTimeout = 2 * time.Second
	// DefaultLinger is how long Send waits, after its lines, for Claude
	// Code to close its side of the connection.
	DefaultLinger = 200 * time.Millisecond
)

// ErrNoSocket is returned by New when Config.Socket is empty: the process
// was not started by a Claude Code session that offers a socket.
var ErrNoSocket = errors.New("ccmsg: no messaging socket")

// Config configures a Client. Socket is required.
type Config struct {
	// Socket is the path of the Unix socket
	// (CLAUDE_CODE_MESSAGING_SOCKET). Required.
	Socket string
	// Token authenticates (CLAUDE_CODE_MESSAGING_TOKEN). Optional: ""
	// sends no auth line (Claude Code on Linux takes lines without one).
	Token string
	// Timeout bounds one Send. Optional: 0 means DefaultTimeout.
	Timeout time.Duration
	// Linger bounds the wait for the peer's close after the lines.
	// Optional: 0 means DefaultLinger; a negative value does not wait.
	Linger time.Duration
}

// Message is one message for the session's model.
type Message struct {
	// Content is the text the model sees. Required.
	Content string
	// From names the sender for Claude Code's logs (the model does not see
	// it). Optional.
	From string
	// MsgID identifies the message. Optional.
	MsgID string
	// Priority is Claude Code's queue priority. Optional: "" means Claude
	// Code's default, "next".
	Priority string
}

// Client sends messages to one Claude Code session. It is safe for
// concurrent use.
type Client struct {
	cfg  Config
	auth []byte // the auth line, or nil
}

// New returns a Client for cfg; it does not connect.
func New(cfg Config) (*Client, error) {
	if cfg.Socket == "" {
		return nil, ErrNoSocket
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultLinger
	}
	c := &Client{cfg: cfg}
	if cfg.Token != "" {
		line, err := json.Marshal(authLine{Type: "auth", Token: cfg.Token})
		if err != nil {
			return nil, fmt.Errorf("ccmsg: %w", err)
		}
		c.auth = append(line, '\n')
	}
	return c, nil
}

// Socket returns the socket's path.
func (c *Client) Socket() string { return c.cfg.Socket }

// authLine is the first line of a connection.
type authLine struct {
	Type  string `json:"type"`
	Token string `json:"token"`
}

// userLine is one message.
type userLine struct {
	Type     string      `json:"type"`
	Message  userMessage `json:"message"`
	From     string      `json:"from,omitempty"`
	MsgID    string      `json:"msg_id,omitempty"`
	Priority string      `json:"priority,omitempty"`
}

type userMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Lines renders msgs as the lines Send writes after the auth line.
func Lines(msgs ...Message) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, m := range msgs {
		if m.Content == "" {
			return nil, errors.New("ccmsg: empty message content")
		}
		if err := enc.Encode(userLine{Type: "user", Message: userMessage{Role: "user", Content: m.Content},
			From: m.From, MsgID: m.MsgID, Priority: m.Priority}); err != nil {
			return nil, fmt.Errorf("ccmsg: %w", err)
		}
	}
	return b.Bytes(), nil
}

// Send writes msgs, in order, on a new connection: the auth line, then one
// line per message. It returns nil once every byte was written and the
// connection ended without a reset; an error when the socket is missing or
// refuses, a write fails, or ctx or Config.Timeout ends first. Claude Code
// acknowledges nothing, so nil means written, not shown.
func (c *Client) Send(ctx context.Context, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	lines, err := Lines(msgs...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.cfg.Socket)
	if err != nil {
		return fmt.Errorf("ccmsg: connect: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(append(c.auth[:len(c.auth):len(c.auth)], lines...)); err != nil {
		return fmt.Errorf("ccmsg: write: %w", err)
	}
	if c.cfg.Linger < 0 {
		return nil
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	if err := uc.CloseWrite(); err != nil {
		return fmt.Errorf("ccmsg: close write: %w", err)
	}
	uc.SetReadDeadline(time.Now().Add(c.cfg.Linger))
	_, err = io.Copy(io.Discard, uc)
	switch {
	case err == nil, errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil:
		return nil // closed by the peer, or still open after Linger
	case ctx.Err() != nil:
		return fmt.Errorf("ccmsg: %w", ctx.Err())
	}
	return fmt.Errorf("ccmsg: after writing: %w", err)
}
