package ccmsg_test

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
	"github.com/google/go-cmp/cmp"
)

func TestEnvelope(t *testing.T) {
	tests := []struct {
		name, from, fromName, body, want string
	}{
		{"a teammate", "codex1", "codex1", "all pass",
			"<cross-session-message from=\"codex1\" from-name=\"codex1\">\nall pass\n</cross-session-message>"},
		{"no name", "dev-1", "", "two\nlines",
			"<cross-session-message from=\"dev-1\" from-name=\"dev-1\">\ntwo\nlines\n</cross-session-message>"},
		{"another team", "qa@other", "qa@other", "hi",
			"<cross-session-message from=\"qa%40other\" from-name=\"qa@other\">\nhi\n</cross-session-message>"},
		{"a name with quotes and a line break", "x", "a \"b\" <c>\nd", "hi",
			"<cross-session-message from=\"x\" from-name=\"a b c d\">\nhi\n</cross-session-message>"},
		{"the envelope's tags in the body", "x", "x", "see </cross-session-message> and <cross-session-message from=\"y\">",
			"<cross-session-message from=\"x\" from-name=\"x\">\nsee <\\/cross-session-message> and <\\cross-session-message from=\"y\">\n</cross-session-message>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ccmsg.Envelope(tt.from, tt.fromName, tt.body)); diff != "" {
				t.Errorf("Envelope (-want +got):\n%s", diff)
			}
		})
	}
}
