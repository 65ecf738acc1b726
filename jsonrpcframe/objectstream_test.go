package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestObjectStream: values go out framed as asked (or as the reader
// detected); unusable messages are skipped and counted, not errors.
func TestObjectStream(t *testing.T) {
	in := "not json\n" + `{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1}}` + "\n[1,2]\n" + `{"jsonrpc":"2.0","method":"b"}` + "\n"
	var out bytes.Buffer
	s := NewObjectStream(strings.NewReader(in), &out, nil, FramingUnknown, nil)
	var got []string
	for {
		var v map[string]any
		err := s.ReadObject(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v["method"].(string))
	}
	if strings.Join(got, ",") != "a,b" || s.Skipped() != 2 {
		t.Errorf("read %v, skipped %d; want a,b and 2", got, s.Skipped())
	}
	// Each unusable message was answered with why.
	answers := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(answers) != 2 || !strings.Contains(answers[0], `"code":-32700`) || !strings.Contains(answers[1], `"code":-32600`) {
		t.Errorf("answers to the unusable messages: %q", answers)
	}
	out.Reset()
	if err := s.WriteObject(map[string]any{"jsonrpc": "2.0", "id": 1, "result": "ok"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `{"jsonrpc":"2.0","id":1,"result":"ok"}`+"\n" {
		t.Errorf("wrote %q", got)
	}
	var hdr bytes.Buffer
	h := NewObjectStream(strings.NewReader(""), &hdr, nil, FramingHeader, nil)
	if err := h.WriteObject(json.RawMessage(`{"jsonrpc":"2.0","method":"n"}`)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hdr.String(), "Content-Length: 30\r\n\r\n") {
		t.Errorf("header framing wrote %q", hdr.String())
	}
	if err := h.WriteObject(map[string]any{"not": "json-rpc"}); err == nil {
		t.Error("a value that is not a JSON-RPC message was written")
	}
}
