package ccmsg

import (
	"fmt"
	"strings"
)

// envelopeTag is the tag of Claude Code's cross-session envelope.
const envelopeTag = "cross-session-message"

// Envelope returns body as a message of the peer called name, in the
// envelope Claude Code 2.1.332 gives a message of another session:
//
//	<cross-session-message from="ADDRESS" from-name="NAME">
//	BODY
//	</cross-session-message>
//
// Claude Code keeps such an envelope when it comes as a line's whole
// content, and its terminal then shows the message as a teammate's,
// "Message from @NAME: <first line of BODY>" (the full body on ctrl+o),
// without its frame for the model ("Another Claude session sent a
// message:" and the four lines of warning after it), which the model
// still reads around the envelope. Plain text is shown with that frame.
//
// from is the address the model may answer (SendMessage's to); characters
// Claude Code does not take in it (outside A-Z, a-z, 0-9 and ":_/.-") are
// percent-encoded. name drops '"', '<', '>' and line breaks; "" means
// from. An envelope's tag inside body is escaped as Claude Code escapes it
// ("<\cross-session-message"), so body cannot end the envelope early.
func Envelope(from, name, body string) string {
	if name == "" {
		name = from
	}
	name = strings.Map(func(r rune) rune {
		switch r {
		case '"', '<', '>':
			return -1
		case '\n', '\r':
			return ' '
		}
		return r
	}, name)
	body = strings.NewReplacer("<"+envelopeTag, `<\`+envelopeTag, "</"+envelopeTag, `<\/`+envelopeTag).Replace(body)
	return "<" + envelopeTag + ` from="` + address(from) + `" from-name="` + name + "\">\n" + body + "\n</" + envelopeTag + ">"
}

// address percent-encodes the bytes of s that Claude Code does not take in
// an envelope's from (it keeps A-Z, a-z, 0-9 and ":_/.-", and % for the
// encoding).
func address(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(":_/.-", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
