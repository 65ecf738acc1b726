package tools

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/google/go-cmp/cmp"
)

// TestSessionResources: a session's summary, last result and agent
// messages are resources under atm://dev/<agent_id>/…, listed once they
// exist; once serve shuts down with the session open, the summary
// carries what the agent wrote then, and the closed session stays listed; unknown sessions, teams, parts and schemes
// are RESOURCE_NOT_FOUND.
func TestSessionResources(t *testing.T) {
	h := newHarness(t, func(c *session.Config) {
		c.PersistThreads = true
	})
	ctx := context.Background()
	list := func() [][2]string {
		t.Helper()
		rs, err := h.env.ListResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := [][2]string{}
		for _, r := range rs {
			if r.MIMEType != "text/markdown" || r.Name == "" || r.Description == "" || r.LastModified.IsZero() {
				t.Errorf("resource %+v lacks a name, description, type or time", r)
			}
			out = append(out, [2]string{r.URI, r.Title})
		}
		return out
	}
	read := func(uri string) string {
		t.Helper()
		cs, err := h.env.ReadResource(ctx, uri)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(cs) != 1 || cs[0].URI != uri || cs[0].MIMEType != "text/markdown" {
			t.Fatalf("read %s: %+v", uri, cs)
		}
		return cs[0].Text
	}
	if got := list(); len(got) != 0 {
		t.Errorf("resources before any session: %v", got)
	}
	tpl, err := h.env.ResourceTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, r := range tpl {
		patterns = append(patterns, r.URITemplate)
	}
	if diff := cmp.Diff([]string{"atm://dev/{agent_id}/summary", "atm://dev/{agent_id}/result", "atm://dev/{agent_id}/transcript"}, patterns); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}

	arch := h.ok("codex", `{"prompt":"SAY looking at the code\nSAY found the bug\nfix it","identity":"arch"}`)["agent_id"].(string)
	base := "atm://dev/" + arch + "/"
	want := [][2]string{{base + "summary", "arch: summary"}, {base + "result", "arch: last result"}, {base + "transcript", "arch: agent messages"}}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("resources of a session that ran a turn (-want +got):\n%s", diff)
	}
	if got := read(base + "result"); got != "echo: fix it" {
		t.Errorf("result = %q", got)
	}
	transcript := read(base + "transcript")
	for _, w := range []string{"# Messages of arch (codex session " + arch + ")", "The 2 most recent messages", "## Message 1\n\nlooking at the code\n", "## Message 2\n\nfound the bug\n"} {
		if !strings.Contains(transcript, w) {
			t.Errorf("transcript lacks %q:\n%s", w, transcript)
		}
	}
	summary := read(base + "summary")
	for _, w := range []string{"# arch: codex session " + arch, "- Team: dev\n- Status: idle", "- Thread: thread-1", "1 turn(s)",
		"No summary yet: serve asks the agent for one when it shuts down", "## Last result (completed, ", "echo: fix it"} {
		if !strings.Contains(summary, w) {
			t.Errorf("summary of a live session lacks %q:\n%s", w, summary)
		}
	}

	// Closed when serve shuts down, it keeps its resources; its summary
	// now holds what the agent wrote then.
	h.env.m.Shutdown()
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("resources of the closed session (-want +got):\n%s", diff)
	}
	summary = read(base + "summary")
	if !strings.Contains(summary, "- Status: closed") || !strings.Contains(summary, "## Summary\n\necho: ") || strings.Contains(summary, "No summary yet") {
		t.Errorf("summary of the closed session:\n%s", summary)
	}

	for _, tt := range []struct{ uri, want string }{
		{"atm://dev/codex-nope/summary", `this serve knows no session "codex-nope"`},
		{"atm://other/" + arch + "/summary", `the team is "dev"`},
		{base + "diff", "no part diff"},
		{"file:///etc/passwd", "not an atm:// URI"},
		{"atm://dev/" + arch, "not atm://<team>/<agent_id>/<part>"},
		{"atm://dev//summary", "not atm://<team>/<agent_id>/<part>"},
	} {
		_, err := h.env.ReadResource(ctx, tt.uri)
		if !errors.Is(err, proxyerr.ErrResourceNotFound) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("read %s: %v, want RESOURCE_NOT_FOUND saying %q", tt.uri, err, tt.want)
		}
	}
}

// TestResourceTextCap: a result longer than the cap is cut, saying how to
// read on.
func TestResourceTextCap(t *testing.T) {
	long := strings.Repeat("é", resourceTextCap+5)
	got := capText(long)
	if !strings.HasPrefix(got, strings.Repeat("é", resourceTextCap)+"\n\n[… 5 more characters: agent_status {agent_id, offset: 100000} reads on]") {
		t.Errorf("capped text ends %q", got[len(got)-80:])
	}
	if capText("short") != "short" {
		t.Error("a short text was changed")
	}
}

var _ mcpconn.ResourceHandler = (*Env)(nil)
