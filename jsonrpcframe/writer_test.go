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

// TestWriteBatch: a batch reads back as its messages, in both framings.
func TestWriteBatch(t *testing.T) {
	ms := []*Message{
		{Versioned: true, Method: "a", Params: json.RawMessage(`{"x":1}`)},
		{Versioned: true, ID: IntID(2), Result: json.RawMessage(`"<&>"`)},
		{Method: "c"},
	}
	for _, framing := range []string{"line", "header"} {
		var buf strings.Builder
		var w BatchWriter = NewLineWriter(&buf).(BatchWriter)
		if framing == "header" {
			w = NewHeaderWriter(&buf).(BatchWriter)
		}
		if err := w.WriteBatch(ms); err != nil {
			t.Fatal(err)
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
