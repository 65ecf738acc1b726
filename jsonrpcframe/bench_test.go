package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchMessage returns a request of about size bytes.
func benchMessage(size int) *Message {
	pad := max(size-110, 0)
	m, _ := NewRequest(IntID(12345), "tools/call", map[string]any{
		"name":      "codex",
		"arguments": map[string]string{"prompt": strings.Repeat("x", pad)},
	})
	return m
}

var benchSizes = []struct {
	name string
	size int
}{{"200B", 200}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

// loopReader replays one stream forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	if l.off == len(l.data) {
		l.off = 0
	}
	n := copy(p, l.data[l.off:])
	l.off += n
	return n, nil
}

func encoded(b *testing.B, m *Message, framing string, copies int) []byte {
	var buf bytes.Buffer
	var w Writer = NewLineWriter(&buf)
	if framing == "header" {
		w = NewHeaderWriter(&buf)
	}
	for range copies {
		if err := w.Write(m); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes()
}

// BenchmarkRead reads messages of 200 B, 64 KiB and 1 MiB in both framings
// and reports throughput (MB/s), messages per second and allocations.
func BenchmarkRead(b *testing.B) {
	for _, framing := range []string{"line", "header"} {
		for _, s := range benchSizes {
			b.Run(fmt.Sprintf("%s/%s", framing, s.name), func(b *testing.B) {
				m := benchMessage(s.size)
				one := encoded(b, m, framing, 1)
				stream := encoded(b, m, framing, max(1, (4<<20)/len(one)))
				var r Reader = NewLineReader(&loopReader{data: stream}, nil)
				if framing == "header" {
					r = NewHeaderReader(&loopReader{data: stream}, nil)
				}
				b.SetBytes(int64(len(one)))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := r.Read(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkWrite writes messages of 200 B, 64 KiB and 1 MiB in both framings.
func BenchmarkWrite(b *testing.B) {
	for _, framing := range []string{"line", "header"} {
		for _, s := range benchSizes {
			b.Run(fmt.Sprintf("%s/%s", framing, s.name), func(b *testing.B) {
				m := benchMessage(s.size)
				var w Writer = NewLineWriter(io.Discard)
				if framing == "header" {
					w = NewHeaderWriter(io.Discard)
				}
				b.SetBytes(int64(len(encoded(b, m, framing, 1))))
				b.ReportAllocs()
				for b.Loop() {
					if err := w.Write(m); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkWriteBatch writes 16 messages of 300 bytes (a turn's burst of
// Codex events) with one WriteBatch.
func BenchmarkWriteBatch(b *testing.B) {
	ms := make([]*Message, 16)
	for i := range ms {
		ms[i] = benchMessage(300)
	}
	for _, framing := range []string{"line", "header"} {
		b.Run(framing, func(b *testing.B) {
			var w Writer = NewLineWriter(io.Discard)
			if framing == "header" {
				w = NewHeaderWriter(io.Discard)
			}
			bw := w.(BatchWriter)
			b.ReportAllocs()
			for b.Loop() {
				if err := bw.WriteBatch(ms); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(ms))/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkString decodes a 1 KiB agent message with escapes (newlines,
// quotes), as a turn's result text is read.
func BenchmarkString(b *testing.B) {
	text := strings.Repeat("Ran `go test ./...`: \"ok\".\nNext line é ✓\n", 24)
	tok, _ := json.Marshal(text)
	b.Run("String", func(b *testing.B) {
		b.SetBytes(int64(len(tok)))
		b.ReportAllocs()
		for b.Loop() {
			if s, ok := String(tok); !ok || len(s) != len(text) {
				b.Fatal("bad decode")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(tok)))
		b.ReportAllocs()
		for b.Loop() {
			var s string
			if err := json.Unmarshal(tok, &s); err != nil || len(s) != len(text) {
				b.Fatal("bad decode")
			}
		}
	})
}

// BenchmarkMembers splits the params of a Codex event (an agent message of
// about 1 KiB, with escapes) into their members and looks up _meta, as the
// backend and the proxy do for every event they relay.
func BenchmarkMembers(b *testing.B) {
	text := strings.Repeat("Ran `go test ./...`: \"ok\".\nNext line é ✓\n", 24)
	params, _ := json.Marshal(map[string]any{
		"_meta": map[string]any{"requestId": 7, "threadId": "01a20100-e67a-740c-ad0b-2bd67389f9a8"},
		"id":    "01a20100-e67b-7902-8e82-8f9d8d0fe4bd",
		"msg":   map[string]any{"type": "agent_message", "message": text, "turn_id": "1"},
	})
	b.SetBytes(int64(len(params)))
	b.ReportAllocs()
	var buf [8]Member
	for b.Loop() {
		ms, ok := AppendMembers(buf[:0], params)
		if !ok || len(ms) != 3 || Lookup(ms, "_meta") == nil {
			b.Fatal("bad split")
		}
	}
}
