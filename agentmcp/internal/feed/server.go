package feed

import (
	"bufio"
	"encoding/json"
	"net"
	"sync"
)

// client is one connection to the feed: a writer goroutine sends its
// queue, a reader goroutine takes its answers.
type client struct {
	conn   net.Conn
	mu     sync.Mutex // guards closed and queue
	cond   *sync.Cond
	queue  [][]byte
	max    int
	closed bool
	// ending: close once the queue is written (the feed is closing).
	ending bool
}

// end closes the client once its queue is written.
func (c *client) end() {
	c.mu.Lock()
	c.ending = true
	c.cond.Broadcast()
	c.mu.Unlock()
}

// send queues a frame; a client whose queue is full is closed (it
// reconnects and starts from a snapshot). It never blocks.
func (c *client) send(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if len(c.queue) >= c.max {
		c.closeLocked()
		return
	}
	c.queue = append(c.queue, b)
	c.cond.Signal()
}

func (c *client) close() {
	c.mu.Lock()
	c.closeLocked()
	c.mu.Unlock()
}

func (c *client) closeLocked() {
	if !c.closed {
		c.closed = true
		c.conn.Close()
		c.cond.Broadcast()
	}
}

// write sends the queue until the client is closed.
func (c *client) write() {
	w := bufio.NewWriter(c.conn)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed && !c.ending {
			c.cond.Wait()
		}
		if c.closed || len(c.queue) == 0 && c.ending {
			c.closeLocked()
			c.mu.Unlock()
			return
		}
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, b := range q {
			w.Write(b)
		}
		if err := w.Flush(); err != nil {
			c.close()
			return
		}
	}
}

// accept serves the socket's clients.
func (f *Feed) accept() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		c := &client{conn: conn, max: f.cfg.ClientQueue}
		c.cond = sync.NewCond(&c.mu)
		// What changed since the last publish goes out first: a new
		// client's snapshot is the sessions' state now, not up to
		// Coalesce behind it.
		f.publish()
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			conn.Close()
			return
		}
		f.clients[c] = true
		c.send(encode(Frame{Type: "hello", Serve: &f.cfg.Serve}))
		c.send(encode(f.snapshotLocked()))
		f.mu.Unlock()
		f.wg.Add(2)
		go func() {
			defer f.wg.Done()
			c.write()
		}()
		go func() {
			defer f.wg.Done()
			f.read(c)
			c.close()
			f.mu.Lock()
			delete(f.clients, c)
			f.mu.Unlock()
		}()
	}
}

// read takes a client's frames: answers to approvals.
func (f *Feed) read(c *client) {
	sc := bufio.NewScanner(c.conn)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var fr Frame
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			c.send(encode(Frame{Type: "answered", Error: "not a frame: " + err.Error()}))
			continue
		}
		switch fr.Type {
		case "diff":
			f.wg.Add(1)
			go f.diff(c, fr) // git may take a while: the next frame is read meanwhile
		case "answer":
			res := Frame{Type: "answered", ID: fr.ID, OK: true}
			if err := f.Answer(fr.AgentID, fr.ApprovalID, fr.Decision, fr.Reason, fr.From); err != nil {
				res.OK, res.Error = false, err.Error()
			}
			f.log.Info("approval answered through the feed", "agent_id", fr.AgentID, "approval_id", fr.ApprovalID,
				"decision", fr.Decision, "from", fr.From, "ok", res.OK, "err", res.Error)
			c.send(encode(res))
		default:
			c.send(encode(Frame{Type: "answered", ID: fr.ID, Error: "unknown frame type " + fr.Type}))
		}
	}
}

// broadcastLocked sends a frame to every client; f.mu is held.
func (f *Feed) broadcastLocked(fr Frame) {
	if len(f.clients) == 0 {
		return
	}
	b := encode(fr)
	for c := range f.clients {
		c.send(b)
	}
}

// encode is a frame's line.
func encode(fr Frame) []byte {
	b, _ := json.Marshal(fr)
	return append(b, '\n')
}
