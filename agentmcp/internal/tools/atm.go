package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// sender resolves the identity an ATM tool acts as (FR-4.5, NFR-3): the
// identity of the session named by agent_id, or an explicit identity this
// proxy holds (its own, or one bound to a live session). Nobody can act as
// someone else.
func (e *Env) sender(a mcpconn.Args) (string, error) {
	agentID, err := a.Str("agent_id")
	if err != nil {
		return "", err
	}
	identity, err := a.Str("identity")
	if err != nil {
		return "", err
	}
	if agentID != "" {
		sess := e.m.Get(agentID)
		if sess == nil {
			return "", proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
		}
		rec := sess.Record()
		if !rec.Status.Live() {
			return "", proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": agentID}, "session %s is %s; its identity is not held", agentID, rec.Status)
		}
		if err := sameIdentity(rec.AgentID, rec.Identity, identity); err != nil {
			return "", err
		}
		return rec.Identity, nil
	}
	if identity == "" {
		return "", proxyerr.New(proxyerr.ErrIdentityRequired, nil,
			"an ATM tool called outside a session needs agent_id or identity (an identity this proxy holds)")
	}
	if err := atmclient.ValidateName("identity", identity); err != nil {
		return "", proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "identity"}, "%v", err)
	}
	if identity == e.cfg.Identity {
		return identity, nil
	}
	if e.m.ByIdentity(identity) == nil {
		return "", proxyerr.New(proxyerr.ErrIdentityConflict, map[string]any{"identity": identity},
			"identity %q is not held by this proxy (it holds %q and the identities of its live sessions); nobody can send as someone else",
			identity, e.cfg.Identity)
	}
	return identity, nil
}

// atmTools implements the ATM tools for the proxy and for the tools-only
// server; they differ in how the sender is resolved.
type atmTools struct {
	atm    *atmclient.Client
	team   string
	sender func(a mcpconn.Args) (string, error)
	audit  func(tool, identity, recipient, text string, err error)
	// extraArgs are the argument names accepted besides the tool's own
	// (agent_id and identity in the proxy).
	extraArgs []string
	// teamProblem says what is wrong with the team ("team \"my-teem\"
	// does not exist …; did you mean my-team?"), "" when nothing is; a
	// "team not found" failure carries it. optional.
	teamProblem func() string
}

func (t *atmTools) allowed(own ...string) []string { return append(own, t.extraArgs...) }

// atmError maps atmclient failures: bad names, text, addresses, unknown
// teams and non-members are the caller's (-32602); the rest are internal.
// A team that is not found gets what is wrong with the configured team
// (teamProblem: "did you mean my-team?"), so that an agent's own atm_send
// says it as the lead's does.
func (s *atmTools) atmError(op string, err error) error {
	if errors.Is(err, atmclient.ErrTeamNotFound) && s.teamProblem != nil && strings.Contains(err.Error(), strconv.Quote(s.team)) {
		if p := s.teamProblem(); p != "" {
			return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"team_problem": p}, "%s: %v (%s)", op, err, p)
		}
	}
	for _, bad := range []error{atmclient.ErrInvalidName, atmclient.ErrInvalidText, atmclient.ErrInvalidAddress,
		atmclient.ErrTeamNotFound, atmclient.ErrNotMember} {
		if errors.Is(err, bad) {
			return proxyerr.New(proxyerr.ErrInvalidParams, nil, "%s: %v", op, err)
		}
	}
	return proxyerr.New(proxyerr.ErrInternal, nil, "%s: %v", op, err)
}

func (s *atmTools) send(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	if err := a.CheckUnknown("atm_send", s.allowed("to", "message", "summary")...); err != nil {
		return nil, err
	}
	from, err := s.sender(a)
	if err != nil {
		return nil, err
	}
	to, err := a.Str("to")
	if err != nil {
		return nil, err
	}
	text, err := a.Str("message")
	if err != nil {
		return nil, err
	}
	summary, err := a.Str("summary")
	if err != nil {
		return nil, err
	}
	if to == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "to"}, "argument \"to\" is required")
	}
	if !a.Has("message") {
		return nil, errMessageRequired
	}
	msg, err := s.atm.Send(ctx, atmclient.SendRequest{From: from, Team: s.team, To: to, Text: text, Summary: summary})
	s.audit("atm_send", from, to, text, err)
	if err != nil {
		return nil, s.atmError("atm_send", err)
	}
	agent, team, _ := atmclient.SplitAddress(to)
	if team == "" {
		team = s.team
	}
	out := map[string]any{"message_id": msg.MessageID, "from": from, "to": agent, "team": team}
	return &mcpconn.ToolResult{Text: fmt.Sprintf("sent to %s@%s as %s (message_id %s)", agent, team, from, msg.MessageID), Structured: out}, nil
}

// errMessageRequired is atm_send's and atm_broadcast's answer to a call
// without a message.
var errMessageRequired = proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "message"}, "argument \"message\" is required")

func (s *atmTools) broadcast(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	if err := a.CheckUnknown("atm_broadcast", s.allowed("message", "summary", "team")...); err != nil {
		return nil, err
	}
	from, err := s.sender(a)
	if err != nil {
		return nil, err
	}
	text, err := a.Str("message")
	if err != nil {
		return nil, err
	}
	summary, err := a.Str("summary")
	if err != nil {
		return nil, err
	}
	team, err := a.Str("team")
	if err != nil {
		return nil, err
	}
	if !a.Has("message") {
		return nil, errMessageRequired
	}
	res, err := s.atm.Broadcast(ctx, atmclient.BroadcastRequest{From: from, Team: s.team, ToTeam: team, Text: text, Summary: summary})
	target := firstNonEmpty(team, s.team)
	s.audit("atm_broadcast", from, "@"+target, text, err)
	if err != nil {
		return nil, s.atmError("atm_broadcast", err)
	}
	recipients := res.Recipients
	if recipients == nil {
		recipients = []string{}
	}
	out := map[string]any{"message_id": res.Message.MessageID, "from": from, "team": target, "recipients": recipients}
	return &mcpconn.ToolResult{Text: fmt.Sprintf("broadcast to %d member(s) of %s: %s", len(recipients), target, strings.Join(recipients, ", ")), Structured: out}, nil
}

func (s *atmTools) read(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	if err := a.CheckUnknown("atm_read", s.allowed("all", "mark_read", "limit", "since", "from")...); err != nil {
		return nil, err
	}
	who, err := s.sender(a)
	if err != nil {
		return nil, err
	}
	all, _, err := a.Bool("all")
	if err != nil {
		return nil, err
	}
	markRead, markSet, err := a.Bool("mark_read")
	if err != nil {
		return nil, err
	}
	if !markSet {
		markRead = true
	}
	limit, limitSet, err := a.Int("limit")
	if err != nil {
		return nil, err
	}
	if limitSet && limit < 1 {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "limit"}, "argument \"limit\" must be at least 1")
	}
	sinceArg, err := a.Str("since")
	if err != nil {
		return nil, err
	}
	from, err := a.Str("from")
	if err != nil {
		return nil, err
	}
	opts := atmclient.ReadOptions{All: all, From: from, Limit: limit}
	if sinceArg != "" {
		t, err := parseSince(sinceArg)
		if err != nil {
			return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "since"}, "argument \"since\": %v", err)
		}
		opts.Since = t
	}
	res, err := s.atm.Read(ctx, s.team, who, opts)
	if err != nil {
		s.audit("atm_read", who, "", "", err)
		return nil, s.atmError("atm_read", err)
	}
	msgs := res.Messages // oldest first; with limit, the oldest ones
	out := make([]map[string]any, 0, len(msgs))
	keys := make([]string, 0, len(msgs))
	for _, m := range msgs {
		item := map[string]any{"from": m.From, "message": m.Text, "timestamp": m.Timestamp}
		if m.MessageID != "" {
			item["message_id"] = m.MessageID
		}
		out = append(out, item)
		keys = append(keys, m.Key())
	}
	if markRead && len(keys) > 0 {
		if _, err := s.atm.MarkRead(ctx, s.team, who, keys...); err != nil {
			s.audit("atm_read", who, "", "", err)
			return nil, s.atmError("atm_read: mark read", err)
		}
	}
	s.audit("atm_read", who, "", fmt.Sprintf("%d message(s)", len(out)), nil)
	structured := map[string]any{"identity": who, "count": len(out), "messages": out}
	text := fmt.Sprintf("%d message(s) for %s", len(out), who)
	if len(out) > 0 {
		text += "\n" + jsonText(out)
	}
	return &mcpconn.ToolResult{Text: text, Structured: structured}, nil
}

// parseSince accepts RFC 3339 with or without fractions, and a date.
func parseSince(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 / RFC 3339 time", v)
}

func (s *atmTools) pending(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	if err := a.CheckUnknown("atm_pending_count", s.allowed()...); err != nil {
		return nil, err
	}
	who, err := s.sender(a)
	if err != nil {
		return nil, err
	}
	n, err := s.atm.Pending(ctx, s.team, who)
	if err != nil {
		return nil, s.atmError("atm_pending_count", err)
	}
	return &mcpconn.ToolResult{Text: fmt.Sprintf("%d unread message(s) for %s", n, who), Structured: map[string]any{"identity": who, "count": n}}, nil
}
