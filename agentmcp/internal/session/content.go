package session

import "time"

// Content is what a session has to show beyond its View, for the MCP
// resources (package tools): how its last turn ended, that turn's whole
// result and the agent messages this serve saw. A session this serve has
// not run since it started (one taken from the registry) has none of
// them; its summary is the registry's (Session.Summary).
type Content struct {
	// LastResult is how the last turn ended (its content capped as
	// agent_status shows it), nil before this serve ran a turn.
	LastResult *LastResult
	// Result is the last turn's whole result text ("" when it ended with
	// a proxy error).
	Result string
	// Messages are the agent's messages as its events told them, oldest
	// first: the last 20, each cut to 2,000 characters (agent_status's
	// agent_messages).
	Messages []string
}

// Content returns the session's result and messages as they stand.
func (s *Session) Content() Content {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Content{Messages: append([]string(nil), s.act.messages...)}
	if o := s.last; o != nil {
		last := &LastResult{Status: o.status, FinishedAt: o.finished.UTC().Format(time.RFC3339Nano)}
		if o.err != nil {
			last.Error = o.err.Error()
		} else {
			text, isErr := o.text, o.isError
			last.Content, last.IsError = &text, &isErr
			c.Result = s.fullResult
			if c.Result == "" {
				c.Result = o.text
			}
		}
		c.LastResult = last
	}
	return c
}

// Summary returns the summary the registry keeps for the session (the one
// its closing turn wrote, FR-6), or "" when it has none.
func (s *Session) Summary() (string, error) {
	rec := s.Record()
	if rec.BackendID == "" || !s.m.cfg.Registry.HasSummary(rec.Identity, rec.BackendID) {
		return "", nil
	}
	return s.m.cfg.Registry.ReadSummary(rec.Identity, rec.BackendID)
}
