package jsonrpcframe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriterConcurrent writes from many goroutines through a pipe and reads
// every message back intact: messages never interleave.
func TestWriterConcurrent(t *testing.T) {
	for _, framing := range []string{"line", "header"} {
		t.Run(framing, func(t *testing.T) {
			pr, pw := io.Pipe()
			var w Writer
			var r Reader
			if framing == "line" {
				w, r = NewLineWriter(pw), NewLineReader(pr, nil)
			} else {
				w, r = NewHeaderWriter(pw), NewHeaderReader(pr, nil)
			}
			const goroutines, each = 16, 200
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						// Vary the size so that some messages exceed pipe chunks.
						params := map[string]any{"g": g, "i": i, "pad": strings.Repeat("p", (g*each+i)%5000)}
						m, err := NewNotification("n", params)
						if err != nil {
							t.Error(err)
							return
						}
						if err := w.Write(m); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			go func() { wg.Wait(); pw.Close() }()
			seen := map[string]bool{}
			for {
				m, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				var p struct{ G, I int }
				if err := json.Unmarshal(m.Params, &p); err != nil {
					t.Fatalf("params %s: %v", m.Params, err)
				}
				seen[fmt.Sprint(p.G, "/", p.I)] = true
			}
			if len(seen) != goroutines*each {
				t.Errorf("read %d distinct messages, want %d", len(seen), goroutines*each)
			}
		})
	}
}

func TestWriterOutput(t *testing.T) {
	m := &Message{ID: IntID(1), Result: json.RawMessage(`{"a":"<&>"}`), Extra: map[string]json.RawMessage{"emittedAtMs": json.RawMessage(`5`)}}
	var line, header strings.Builder
	if err := NewLineWriter(&line).Write(m); err != nil {
		t.Fatal(err)
	}
	if err := NewHeaderWriter(&header).Write(m); err != nil {
		t.Fatal(err)
	}
	body := `{"id":1,"result":{"a":"<&>"},"emittedAtMs":5}`
	got := []string{line.String(), header.String()}
	want := []string{body + "\n", "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriterErrors(t *testing.T) {
	m, _ := NewNotification("n", nil)
	if err := NewLineWriter(failWriter{}).Write(m); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Write to a failing writer = %v, want ErrClosedPipe", err)
	}
	bad := &Message{Method: "n", Params: json.RawMessage{}}
	if err := NewLineWriter(io.Discard).Write(bad); err == nil {
		t.Error("Write of a message with empty raw params: no error")
	}
}

// TestWriteBatch: a batch is one Write and reads back as its messages, in
// both framings, with bodies whose Content-Length headers differ in width.
func TestWriteBatch(t *testing.T) {
	ms := []*Message{
		{Versioned: true, Method: "a", Params: json.RawMessage(`{"x":1}`)},
		{Versioned: true, ID: IntID(2), Result: json.RawMessage(`"<&>"`)},
		{Method: "c"},
		{Versioned: true, Method: "long", Params: json.RawMessage(`{"text":"` + strings.Repeat("x", 12345) + `"}`)},
		{Versioned: true, ID: IntID(3), Result: json.RawMessage(`{}`)},
	}
	for _, framing := range []string{"line", "header"} {
		var buf strings.Builder
		cw := &countWriter{w: &buf}
		var w BatchWriter = NewLineWriter(cw).(BatchWriter)
		if framing == "header" {
			w = NewHeaderWriter(cw).(BatchWriter)
		}
		if err := w.WriteBatch(ms); err != nil {
			t.Fatal(err)
		}
		if cw.writes != 1 {
			t.Errorf("%s: %d writes for a batch, want 1", framing, cw.writes)
		}
		r, _ := NewAuto(strings.NewReader(buf.String()), io.Discard, nil)
		for i, want := range ms {
			got, err := r.Read()
			if err != nil {
				t.Fatalf("%s: message %d: %v", framing, i, err)
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(ID{})); diff != "" {
				t.Errorf("%s: message %d (-want +got):\n%s", framing, i, diff)
			}
		}
		if _, err := r.Read(); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after the batch: %v", framing, err)
		}
	}
}

// TestWriteBatchBad: a batch with a message that cannot be encoded writes
// nothing and says why.
func TestWriteBatchBad(t *testing.T) {
	cw := &countWriter{w: io.Discard}
	w := NewLineWriter(cw).(BatchWriter)
	bad := &Message{Method: "n", Params: json.RawMessage{}}
	if err := w.WriteBatch([]*Message{{Method: "ok"}, bad}); err == nil {
		t.Error("WriteBatch with a bad message: no error")
	}
	if cw.writes != 0 {
		t.Errorf("%d writes for a batch that failed, want 0", cw.writes)
	}
}

// TestWriteBatchAllocs: a writer reuses its buffer, so a batch of small
// messages costs no allocation once the buffer has grown.
func TestWriteBatchAllocs(t *testing.T) {
	ms := make([]*Message, 16)
	for i := range ms {
		ms[i] = benchMessage(300)
	}
	for _, w := range []BatchWriter{NewLineWriter(io.Discard).(BatchWriter), NewHeaderWriter(io.Discard).(BatchWriter)} {
		if n := testing.AllocsPerRun(100, func() {
			if err := w.WriteBatch(ms); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%v allocations per batch, want 0", n)
		}
	}
}

// countWriter counts the Write calls it passes on.
type countWriter struct {
	w      io.Writer
	writes int
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}
