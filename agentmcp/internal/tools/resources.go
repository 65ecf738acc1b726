package tools

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// Sessions as MCP resources (mcpconn.ResourceHandler), so that a client
// can attach what an agent did to its conversation (Claude Code: an
// @-mention such as @atm:atm://dev/codex-01…/summary, or its
// ListMcpResourcesTool and ReadMcpResourceTool). Each session this serve
// knows, live or ended (the ended ones from its registry), has up to
// three, under atm://<team>/<agent_id>/<part>:
//
//   - summary: the session's facts, the summary the registry keeps (the
//     one the agent wrote when serve shut down with it open, FR-6/FR-7)
//     and the start of its last result. Every session has one.
//   - result: its last turn's whole result, once a turn has ended in
//     this serve.
//   - transcript: the agent messages this serve saw, once there are any
//     (the last 20, as agent_status shows them).
//
// resources/templates/list gives the three patterns; a read of a part a
// session does not have yet says so in its text, and an unknown session,
// team or part is RESOURCE_NOT_FOUND. The texts are Markdown.

// The parts of a session's resources.
const (
	partSummary    = "summary"
	partResult     = "result"
	partTranscript = "transcript"
)

// resourceScheme is the URI scheme of the session resources.
const resourceScheme = "atm"

// resourceTextCap bounds the text of one resource, in characters: a
// result can be long, and a client holds the whole read in its context.
const resourceTextCap = 100_000

// excerptChars is how much of the last result the summary shows.
const excerptChars = 600

// resourceURI is the URI of one part of a session's resources.
func (e *Env) resourceURI(agentID, part string) string {
	return resourceScheme + "://" + url.PathEscape(e.cfg.Team) + "/" + agentID + "/" + part
}

// ListResources lists the resources of every session this serve knows,
// live ones first, then by last activity.
func (e *Env) ListResources(context.Context) ([]mcpconn.Resource, error) {
	var out []mcpconn.Resource
	for _, s := range e.m.Sessions() {
		v := s.View()
		c := s.Content()
		who := fmt.Sprintf("%s session of %s (%s)", v.Backend, v.Identity, v.Status)
		lastActive, _ := time.Parse(time.RFC3339, v.LastActiveAt)
		out = append(out, mcpconn.Resource{URI: e.resourceURI(v.AgentID, partSummary), Name: v.AgentID + "/" + partSummary,
			Title: v.Identity + ": summary", MIMEType: "text/markdown", LastModified: lastActive,
			Description: "The " + who + ": its facts, its saved summary, the start of its last result"})
		if c.LastResult != nil {
			finished, _ := time.Parse(time.RFC3339Nano, c.LastResult.FinishedAt)
			out = append(out, mcpconn.Resource{URI: e.resourceURI(v.AgentID, partResult), Name: v.AgentID + "/" + partResult,
				Title: v.Identity + ": last result", MIMEType: "text/markdown", LastModified: finished,
				Description: "The last result of the " + who + ", whole (" + c.LastResult.Status + ")"})
		}
		if len(c.Messages) > 0 {
			out = append(out, mcpconn.Resource{URI: e.resourceURI(v.AgentID, partTranscript), Name: v.AgentID + "/" + partTranscript,
				Title: v.Identity + ": agent messages", MIMEType: "text/markdown", LastModified: lastActive,
				Description: fmt.Sprintf("What the agent of the %s said: its %d most recent message(s)", who, len(c.Messages))})
		}
	}
	return out, nil
}

// ResourceURIs returns the URIs ListResources lists, sorted: what a
// client's list of resources holds (a change of it is what
// notifications/resources/list_changed announces).
func (e *Env) ResourceURIs() []string {
	list, _ := e.ListResources(context.Background())
	uris := make([]string, 0, len(list))
	for _, r := range list {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	return uris
}

// ResourceTemplates gives the patterns of the session resources.
func (e *Env) ResourceTemplates(context.Context) ([]mcpconn.ResourceTemplate, error) {
	base := resourceScheme + "://" + url.PathEscape(e.cfg.Team) + "/{agent_id}/"
	return []mcpconn.ResourceTemplate{
		{URITemplate: base + partSummary, Name: "session-summary", Title: "Session summary", MIMEType: "text/markdown",
			Description: "A session's facts, its saved summary and the start of its last result (agent_id as agent_sessions lists it)"},
		{URITemplate: base + partResult, Name: "session-result", Title: "Session's last result", MIMEType: "text/markdown",
			Description: "A session's last result, whole"},
		{URITemplate: base + partTranscript, Name: "session-transcript", Title: "Session's agent messages", MIMEType: "text/markdown",
			Description: "The most recent messages a session's agent sent (the last 20)"},
	}, nil
}

// ReadResource reads one part of a session's resources.
func (e *Env) ReadResource(_ context.Context, uri string) ([]mcpconn.ResourceContents, error) {
	agentID, part, err := e.parseResourceURI(uri)
	if err != nil {
		return nil, err
	}
	s := e.m.Get(agentID)
	if s == nil {
		return nil, proxyerr.New(proxyerr.ErrResourceNotFound, map[string]any{"uri": uri, "agent_id": agentID},
			"resource not found: %s (this serve knows no session %q; resources/list lists the sessions it has)", uri, agentID)
	}
	var text string
	switch part {
	case partSummary:
		text, err = summaryText(s)
		if err != nil {
			return nil, proxyerr.Wrap(proxyerr.ErrInternal, err, map[string]any{"uri": uri}, "read %s: %v", uri, err)
		}
	case partResult:
		text = resultText(s)
	case partTranscript:
		text = transcriptText(s)
	}
	return []mcpconn.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: capText(text)}}, nil
}

// parseResourceURI reads atm://<team>/<agent_id>/<part>; a URI of another
// scheme, team or part is RESOURCE_NOT_FOUND, saying what there is.
func (e *Env) parseResourceURI(uri string) (agentID, part string, err error) {
	notFound := func(why string) error {
		return proxyerr.New(proxyerr.ErrResourceNotFound, map[string]any{"uri": uri},
			"resource not found: %s (%s; this serve's resources are %s)", uri, why, e.resourceURI("<agent_id>", "summary|result|transcript"))
	}
	rest, ok := strings.CutPrefix(uri, resourceScheme+"://")
	if !ok {
		return "", "", notFound("not an " + resourceScheme + ":// URI")
	}
	f := strings.Split(rest, "/")
	if len(f) != 3 || f[1] == "" {
		return "", "", notFound("not " + resourceScheme + "://<team>/<agent_id>/<part>")
	}
	if team, err := url.PathUnescape(f[0]); err != nil || team != e.cfg.Team {
		return "", "", notFound(fmt.Sprintf("the team is %q", e.cfg.Team))
	}
	switch f[2] {
	case partSummary, partResult, partTranscript:
		return f[1], f[2], nil
	}
	return "", "", notFound("no part " + f[2])
}

// summaryText is a session's summary resource.
func summaryText(s *session.Session) (string, error) {
	d := s.Detail(0)
	summary, err := s.Summary()
	if err != nil {
		return "", err
	}
	c := s.Content()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %s session %s\n\n", d.Identity, d.Backend, d.AgentID)
	fmt.Fprintf(&b, "- Team: %s\n- Status: %s", d.Team, d.Status)
	if d.Status != d.RegistryStatus && d.RegistryStatus != "" {
		fmt.Fprintf(&b, " (registry: %s)", d.RegistryStatus)
	}
	fmt.Fprintf(&b, "\n- Thread: %s (%s)\n", deref(d.BackendID, "none yet"), d.ThreadState)
	if d.Role != nil || d.Tag != nil {
		fmt.Fprintf(&b, "- Role: %s; tag: %s\n", deref(d.Role, "none"), deref(d.Tag, "none"))
	}
	fmt.Fprintf(&b, "- Directory: %s", d.Cwd)
	if d.RepoName != nil {
		fmt.Fprintf(&b, " (repository %s, branch %s)", *d.RepoName, deref(d.Branch, "detached"))
	}
	fmt.Fprintf(&b, "\n- Started %s, last active %s, %d turn(s)\n", d.StartedAt, d.LastActiveAt, d.Turns)
	b.WriteString("\n## Summary\n\n")
	if strings.TrimSpace(summary) != "" {
		b.WriteString(strings.TrimSpace(summary) + "\n")
	} else {
		b.WriteString("No summary yet: serve asks the agent for one when it shuts down with the session open (persist_threads), or closes it busy.\n")
	}
	if last := c.LastResult; last != nil {
		fmt.Fprintf(&b, "\n## Last result (%s, %s)\n\n", last.Status, last.FinishedAt)
		if last.Error != "" {
			b.WriteString("The turn ended with an error: " + last.Error + "\n")
		} else {
			b.WriteString(session.Clip(c.Result, excerptChars) + "\n")
		}
	}
	return b.String(), nil
}

// resultText is a session's result resource: the last result, whole.
func resultText(s *session.Session) string {
	c := s.Content()
	switch {
	case c.LastResult == nil:
		return "No turn of this session has ended since this serve started.\n"
	case c.LastResult.Error != "":
		return fmt.Sprintf("The last turn (%s, %s) ended with an error: %s\n", c.LastResult.Status, c.LastResult.FinishedAt, c.LastResult.Error)
	}
	return c.Result
}

// transcriptText is a session's transcript resource: its agent messages,
// oldest first.
func transcriptText(s *session.Session) string {
	c := s.Content()
	v := s.View()
	var b strings.Builder
	fmt.Fprintf(&b, "# Messages of %s (%s session %s)\n\n", v.Identity, v.Backend, v.AgentID)
	if len(c.Messages) == 0 {
		b.WriteString("No agent messages since this serve started.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "The %d most recent messages the agent sent, oldest first (at most 20 are kept, each cut to 2,000 characters).\n", len(c.Messages))
	for i, m := range c.Messages {
		fmt.Fprintf(&b, "\n## Message %d\n\n%s\n", i+1, m)
	}
	return b.String()
}

// capText cuts a text longer than resourceTextCap, saying so.
func capText(text string) string {
	r := []rune(text)
	if len(r) <= resourceTextCap {
		return text
	}
	return string(r[:resourceTextCap]) + fmt.Sprintf("\n\n[… %d more characters: agent_status {agent_id, offset: %d} reads on]\n", len(r)-resourceTextCap, resourceTextCap)
}

// deref is *p, or def when p is nil.
func deref(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
