package jsonrpcframe

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// outcomes reads r to the end and describes every result: "msg <json>",
// "err <sentinel>" and finally "EOF", "UnexpectedEOF" or "fail <error>".
func outcomes(t *testing.T, r Reader) []string {
	t.Helper()
	var got []string
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("reader did not reach the end of the stream")
		}
		m, err := r.Read()
		switch {
		case err == nil:
			b, merr := m.MarshalJSON()
			if merr != nil {
				t.Fatalf("marshal: %v", merr)
			}
			got = append(got, "msg "+string(b))
			continue
		case errors.Is(err, io.EOF):
			return append(got, "EOF")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return append(got, "UnexpectedEOF")
		}
		var me *MessageError
		if !errors.As(err, &me) {
			return append(got, "fail "+err.Error())
		}
		got = append(got, "err "+sentinelName(me.Err))
	}
}

func sentinelName(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{{ErrParse, "parse"}, {ErrInvalid, "invalid"}, {ErrBatch, "batch"}, {ErrTooLarge, "too-large"}, {ErrHeader, "header"}} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "unknown: " + err.Error()
}

const (
	ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	note = `{"jsonrpc":"2.0","method":"n"}`
)

func TestLineReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"one message", ping + "\n", 0, []string{"msg " + ping, "EOF"}},
		{"no trailing newline", ping, 0, []string{"msg " + ping, "EOF"}},
		{"CRLF, blank lines, white space", "\r\n\n  " + ping + "  \r\n\r\n\t" + note + "\r\n", 0, []string{"msg " + ping, "msg " + note, "EOF"}},
		{"non-JSON line then next message", "hello world\n" + ping + "\n", 0, []string{"err parse", "msg " + ping, "EOF"}},
		{"pretty JSON spanning lines is one error per line", "{\n\"id\":1,\n\"result\":{}\n}\n" + ping + "\n", 0,
			[]string{"err parse", "err parse", "err parse", "err parse", "msg " + ping, "EOF"}},
		{"batch", `[` + ping + `,` + note + "]\n" + note + "\n", 0, []string{"err batch", "msg " + note, "EOF"}},
		{"invalid message", `{"id":{},"method":"m"}` + "\n" + ping + "\n", 0, []string{"err invalid", "msg " + ping, "EOF"}},
		{"NUL bytes", "\x00\x00\n" + ping + "\n", 0, []string{"err parse", "msg " + ping, "EOF"}},
		{"invalid UTF-8 outside strings", "\xff\xfe{}\n" + ping + "\n", 0, []string{"err parse", "msg " + ping, "EOF"}},
		{"too large then next message", `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 200) + `"}` + "\n" + ping + "\n", 100,
			[]string{"err too-large", "msg " + ping, "EOF"}},
		{"too large last line without newline", ping + "\n" + strings.Repeat("y", 300), 100, []string{"msg " + ping, "err too-large", "EOF"}},
		{"exactly at the limit", ping + "\r\n", len(ping), []string{"msg " + ping, "EOF"}},
		{"many messages in one write", strings.Repeat(ping+"\n", 50), 0, append(repeat("msg "+ping, 50), "EOF")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomes(t, NewLineReader(strings.NewReader(tt.in), &Options{MaxMessageSize: tt.max}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeaderReader(t *testing.T) {
	frame := func(body string) string { return "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body }
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"one message", frame(ping), 0, []string{"msg " + ping, "EOF"}},
		{"two back to back", frame(ping) + frame(note), 0, []string{"msg " + ping, "msg " + note, "EOF"}},
		{"case-insensitive name, other headers, LF only", "content-type: application/vscode-jsonrpc\nCONTENT-LENGTH:  " + itoa(len(ping)) + " \n\n" + ping, 0,
			[]string{"msg " + ping, "EOF"}},
		{"blank lines between messages", frame(ping) + "\r\n\r\n" + frame(note), 0, []string{"msg " + ping, "msg " + note, "EOF"}},
		{"missing length then resync", "X-Other: 1\r\n\r\n" + ping + frame(note), 0, []string{"err header", "msg " + note, "EOF"}},
		{"bad length then resync", "Content-Length: abc\r\n\r\n" + ping + "\r\n" + frame(note), 0, []string{"err header", "msg " + note, "EOF"}},
		{"negative length", "Content-Length: -5\r\n\r\n" + frame(note), 0, []string{"err header", "msg " + note, "EOF"}},
		{"garbage line then message", "hello there\r\n" + frame(ping), 0, []string{"err header", "msg " + ping, "EOF"}},
		{"header glued to garbage", "garbage" + frame(ping), 0, []string{"err header", "msg " + ping, "EOF"}},
		{"body not JSON", frame("not json") + frame(ping), 0, []string{"err parse", "msg " + ping, "EOF"}},
		{"batch body", frame("["+ping+"]") + frame(note), 0, []string{"err batch", "msg " + note, "EOF"}},
		{"too large body skipped", frame(`{"jsonrpc":"2.0","method":"`+strings.Repeat("z", 300)+`"}`) + frame(ping), 100,
			[]string{"err too-large", "msg " + ping, "EOF"}},
		{"truncated header", "Content-Len", 0, []string{"err header", "EOF"}},
		{"header block without body", "Content-Length: 10\r\n", 0, []string{"UnexpectedEOF"}},
		{"length larger than the data", "Content-Length: 100\r\n\r\n" + ping, 0, []string{"UnexpectedEOF"}},
		{"too large and truncated", "Content-Length: 1000\r\n\r\nabc", 100, []string{"err too-large", "EOF"}},
		// A bogus length is refused at once, never waited for: the next
		// message is read (it used to be swallowed by a 99999999999999-byte
		// discard).
		{"absurd length, then a message", "Content-Length: 99999999999999\r\n\r\n" + frame(ping), 0, []string{"err too-large", "msg " + ping, "EOF"}},
		{"absurd length, garbage, a message", "Content-Length: 99999999999999\r\n\r\n{\"x\":\n1}\n" + frame(note), 0, []string{"err too-large", "msg " + note, "EOF"}},
		{"NUL in body", frame("\x00"+ping) + frame(note), 0, []string{"err parse", "msg " + note, "EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomes(t, NewHeaderReader(strings.NewReader(tt.in), &Options{MaxMessageSize: tt.max}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAutoDetect(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		framing Framing
		reply   string
	}{
		{"ndjson object", "\r\n  " + ping + "\n", FramingLine, `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"},
		{"ndjson batch", "[" + ping + "]\n", FramingLine, `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"},
		{"headers", "\nContent-Length: " + itoa(len(ping)) + "\r\n\r\n" + ping, FramingHeader,
			"Content-Length: 36\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"other header first", "Content-Type: application/json\nContent-Length: " + itoa(len(ping)) + "\n\n" + ping, FramingHeader,
			"Content-Length: 36\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"garbage first line is NDJSON", "not json at all\n" + ping + "\n", FramingLine, `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r, w := NewAuto(strings.NewReader(tt.in), &out, nil)
			if r.Framing() != FramingUnknown {
				t.Errorf("Framing before Read = %v", r.Framing())
			}
			_, _ = r.Read()
			if r.Framing() != tt.framing {
				t.Errorf("Framing = %v, want %v", r.Framing(), tt.framing)
			}
			resp, _ := NewResponse(IntID(1), nil)
			if err := w.Write(resp); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.reply {
				t.Errorf("reply = %q, want %q", got, tt.reply)
			}
		})
	}
	r, _ := NewAuto(strings.NewReader("  \n"), io.Discard, nil)
	if _, err := r.Read(); !errors.Is(err, io.EOF) {
		t.Errorf("Read of white space only = %v, want EOF", err)
	}
}

// TestTinyWrites feeds messages in both framings one byte per Write through a
// pipe.
func TestTinyWrites(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
	}{
		{"line", ping + "\r\n" + note + "\n"},
		{"header", "Content-Length: 36\r\n\r\n" + ping[:36] + "Content-Length: " + itoa(len(note)) + "\r\n\r\n" + note},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				for i := 0; i < len(tt.in); i++ {
					if _, err := pw.Write([]byte{tt.in[i]}); err != nil {
						return
					}
				}
				pw.Close()
			}()
			r, _ := NewAuto(pr, io.Discard, nil)
			got := outcomes(t, r)
			if len(got) != 3 || got[2] != "EOF" {
				t.Errorf("got %q, want two outcomes and EOF", got)
			}
		})
	}
}

// TestHugeLine sends a 100 MiB line under the default 64 MiB limit without a
// fixed line cap getting in the way: the line is reported and skipped, and
// the next message reads normally.
func TestHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MiB read")
	}
	src := io.MultiReader(&repeatReader{b: 'a', n: 100 << 20}, strings.NewReader("\n"+ping+"\n"))
	got := outcomes(t, NewLineReader(src, nil))
	want := []string{"err too-large", "msg " + ping, "EOF"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLargeMessageUnderLimit reads a 5 MiB message in both framings.
func TestLargeMessageUnderLimit(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"m","params":{"s":"` + strings.Repeat("b", 5<<20) + `"}}`
	for name, r := range map[string]Reader{
		"line":   NewLineReader(strings.NewReader(big+"\n"), nil),
		"header": NewHeaderReader(strings.NewReader("Content-Length: "+itoa(len(big))+"\r\n\r\n"+big), nil),
	} {
		m, err := r.Read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(m.Params) != 5<<20+8 {
			t.Errorf("%s: params length %d", name, len(m.Params))
		}
	}
}

// TestReaderDoesNotBlockAfterMessage checks that a message is returned as
// soon as its bytes are there, without waiting for more input.
func TestReaderDoesNotBlockAfterMessage(t *testing.T) {
	for _, framing := range []string{"line", "header"} {
		pr, pw := io.Pipe()
		var r Reader = NewLineReader(pr, nil)
		in := ping + "\n"
		if framing == "header" {
			r = NewHeaderReader(pr, nil)
			in = "Content-Length: " + itoa(len(ping)) + "\r\n\r\n" + ping
		}
		go func() { _, _ = pw.Write([]byte(in)) }()
		done := make(chan error, 1)
		go func() { _, err := r.Read(); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", framing, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Read blocked although a whole message was available", framing)
		}
		pw.Close()
	}
}

type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range p[:n] {
		p[i] = r.b
	}
	r.n -= n
	return n, nil
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func itoa(n int) string {
	b, _ := IntID(int64(n)).MarshalJSON()
	return string(b)
}
