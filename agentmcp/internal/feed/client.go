package feed

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
)

// Conn is a client's connection to a serve's feed (Dial).
type Conn struct {
	c   net.Conn
	sc  *bufio.Scanner
	wmu sync.Mutex // one writer
}

// Dial connects to the feed whose socket is at path.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("feed: dial: %w", err)
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	return &Conn{c: c, sc: sc}, nil
}

// Next returns the next frame from the serve; an error once the stream
// ended (the serve exited or closed the connection).
func (c *Conn) Next() (Frame, error) {
	if !c.sc.Scan() {
		err := c.sc.Err()
		if err == nil {
			err = fmt.Errorf("feed: the stream ended")
		}
		return Frame{}, err
	}
	var fr Frame
	if err := json.Unmarshal(c.sc.Bytes(), &fr); err != nil {
		return Frame{}, fmt.Errorf("feed: frame: %w", err)
	}
	return fr, nil
}

// Send sends a frame to the serve (an answer).
func (c *Conn) Send(fr Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.c.Write(encode(fr)); err != nil {
		return fmt.Errorf("feed: send: %w", err)
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
