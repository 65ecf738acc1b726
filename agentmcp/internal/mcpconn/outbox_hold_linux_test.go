package mcpconn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// batchRecorder is a BatchWriter that records every write: one string per
// write, the messages' methods (or "answer" for a response) joined by
// spaces.
type batchRecorder struct {
	mu     sync.Mutex
	writes []string
}

func (r *batchRecorder) Write(m *jsonrpcframe.Message) error {
	return r.WriteBatch([]*jsonrpcframe.Message{m})
}

func (r *batchRecorder) WriteBatch(ms []*jsonrpcframe.Message) error {
	var names []string
	for _, m := range ms {
		if m.IsResponse() {
			names = append(names, "answer")
		} else {
			names = append(names, m.Method)
		}
	}
	r.mu.Lock()
	r.writes = append(r.writes, strings.Join(names, " "))
	r.mu.Unlock()
	return nil
}

func (r *batchRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

// newHoldingOutbox returns a client writing to a batchRecorder, with the
// gauge of an OS pipe (which nothing reads; fill writes bytes to it).
func newHoldingOutbox(t *testing.T) (c *outbox, rec *batchRecorder, fill func(n int)) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	gauge := newPipeGauge(w)
	if gauge == nil {
		t.Fatal("no gauge for an OS pipe")
	}
	rec = &batchRecorder{}
	c = newOutbox(rec, gauge, 0, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { c.close(); w.Close(); r.Close() })
	fill = func(n int) {
		if _, err := gauge.Write(bytes.Repeat([]byte("x"), n)); err != nil {
			t.Fatal(err)
		}
	}
	return c, rec, fill
}

func aNote(method string) func() *jsonrpcframe.Message {
	return func() *jsonrpcframe.Message {
		m, err := jsonrpcframe.NewNotification(method, map[string]any{})
		if err != nil {
			panic(err)
		}
		return m
	}
}

func aResponse(t *testing.T) *jsonrpcframe.Message {
	m, err := jsonrpcframe.NewResponse(jsonrpcframe.IntID(1), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHeldEvents: the Codex reader's events are held until it runs dry and
// then go out in one write; whatever else is written puts them out first,
// in the same write (a response) or after them (an event from elsewhere,
// through the queue); a full batch goes at once; a client that is behind
// gets them from the pump, in order; a client that is gone drops them.
func TestHeldEvents(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		c.event(aNote("e1"), true)
		c.event(aNote("e2"), true)
		if got := rec.got(); len(got) != 0 {
			t.Errorf("written before the flush: %q", got)
		}
		c.flushHeld()
		c.flushHeld() // nothing held: no write
		c.event(aNote("e3"), true)
		c.flushHeld()
		if diff := cmp.Diff([]string{"e1 e2", "e3"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("response", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		c.event(aNote("e1"), true)
		c.event(aNote("e2"), true)
		if err := c.write(aResponse(t)); err != nil {
			t.Fatal(err)
		}
		c.flushHeld()
		if diff := cmp.Diff([]string{"e1 e2 answer"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("reserved_answer", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		c.event(aNote("e1"), true)
		if !c.reserve(100) {
			t.Fatal("reserve refused with room in the pipe")
		}
		c.event(aNote("during"), true) // the pipe is reserved: queued
		c.writeReserved(aResponse(t))
		poll.Until(t, "the queued event", func() bool { return len(rec.got()) == 2 })
		if diff := cmp.Diff([]string{"e1 answer", "during"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("other_events_queue_behind", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		c.event(aNote("e1"), true)
		c.event(aNote("other"), false)
		c.event(aNote("e2"), true)        // behind the queued one now
		time.Sleep(20 * time.Millisecond) // the pump has had its chance
		if got := rec.got(); len(got) != 0 {
			t.Errorf("written before the flush: %q", got)
		}
		c.flushHeld()
		poll.Until(t, "the queued events", func() bool { return len(rec.got()) == 2 })
		if diff := cmp.Diff([]string{"e1", "other e2"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("full_batch", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		var want []string
		for i := range maxEventBatch + 1 {
			want = append(want, fmt.Sprintf("e%d", i))
			c.event(aNote(want[i]), true)
		}
		c.flushHeld()
		if diff := cmp.Diff([]string{strings.Join(want[:maxEventBatch], " "), want[maxEventBatch]}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("client_behind", func(t *testing.T) {
		c, rec, fill := newHoldingOutbox(t)
		c.event(aNote("e1"), true)
		c.event(aNote("e2"), true)
		fill(c.gauge.capacity - inlineSlack) // no room for another event
		c.event(aNote("e3"), true)
		poll.Until(t, "the pump", func() bool { return len(rec.got()) == 1 })
		c.flushHeld()
		if diff := cmp.Diff([]string{"e1 e2 e3"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("gone", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		c.event(aNote("e1"), true)
		c.markGone(nil)
		c.flushHeld()
		if got := rec.got(); len(got) != 0 {
			t.Errorf("written after the client went: %q", got)
		}
	})
}

// TestProgress: progress goes out at once when the pipe has room (with the
// held events, in the same write), through the queue when the client is
// behind, and never waits for a write that holds omu; queued progress of an
// answered request is not written; Flush and reserve do not wait for omu.
func TestProgress(t *testing.T) {
	newProgress := func(c *outbox) *Progress { return &Progress{c: c, token: json.RawMessage(`1`)} }
	t.Run("inline", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		p := newProgress(c)
		p.Send("a")
		c.event(aNote("e1"), true)
		p.Send("b")
		if diff := cmp.Diff([]string{"notifications/progress", "e1 notifications/progress"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("client_behind", func(t *testing.T) {
		c, rec, fill := newHoldingOutbox(t)
		p := newProgress(c)
		fill(c.gauge.capacity - inlineSlack) // no room: the pump writes it
		p.Send("a")
		poll.Until(t, "the pump", func() bool { return len(rec.got()) == 1 })
		if diff := cmp.Diff([]string{"notifications/progress"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("answer_being_written", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		p := newProgress(c)
		c.event(aNote("e1"), true)
		c.omu.Lock() // an answer is being written (and may wait for the client)
		noWait(t, "Send, flushHeld and reserve", func() {
			p.Send("late")
			c.flushHeld() // the held event goes to the pump instead
			if c.reserve(10) {
				t.Error("reserve claimed the pipe while omu was held")
			}
		})
		p.finish() // the answer: no progress after it
		if err := c.writeOrdered(aResponse(t)); err != nil {
			t.Fatal(err)
		}
		c.omu.Unlock()
		poll.Until(t, "the pump", func() bool { return len(rec.got()) == 2 })
		p.Send("after")
		time.Sleep(20 * time.Millisecond) // the pump has had its chance
		// e1 could not be flushed while the answer was written: it went
		// through the queue, as events do when the client is behind.
		if diff := cmp.Diff([]string{"answer", "e1"}, rec.got()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("gone", func(t *testing.T) {
		c, rec, _ := newHoldingOutbox(t)
		c.markGone(nil)
		newProgress(c).Send("a")
		if got := rec.got(); len(got) != 0 || c.progressDropped.Load() != 1 {
			t.Errorf("after the client went: writes %q, %d dropped", got, c.progressDropped.Load())
		}
	})
}
