package atmclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Team is a team's config.json. Keys this type does not model stay in Extra
// and are written back by MarshalJSON, so a rewrite loses nothing.
type Team struct {
	Name        string
	Description string
	LeadAgentID string // "team-lead@{team}"
	Members     []Member
	Extra       map[string]json.RawMessage
}

// Member is one element of a team's members. Name is the routing key: the
// member's inbox is inboxes/{Name}.json.
type Member struct {
	Name      string
	AgentID   string // "name@team"
	AgentType string
	Model     string
	Extra     map[string]json.RawMessage
}

// Member returns the member called name, or false.
func (t *Team) Member(name string) (Member, bool) {
	i := slices.IndexFunc(t.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return t.Members[i], true
}

// UnmarshalJSON decodes config.json. Modeled keys are taken only when they
// hold a non-empty string (members: an array); anything else stays in Extra.
func (t *Team) UnmarshalJSON(data []byte) error {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil || f == nil {
		return errors.New("team config is not a JSON object")
	}
	out := Team{Name: takeString(f, "name"), Description: takeString(f, "description"), LeadAgentID: takeString(f, "leadAgentId")}
	if raw, ok := f["members"]; ok {
		if err := json.Unmarshal(raw, &out.Members); err != nil {
			return fmt.Errorf("team config members: %w", err)
		}
		if out.Members != nil {
			delete(f, "members")
		}
	}
	out.Extra = f
	*t = out
	return nil
}

// MarshalJSON encodes the team: name, description, leadAgentId, members,
// then Extra sorted by key.
func (t Team) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	b = appendKnown(b, "name", t.Name)
	b = appendKnown(b, "description", t.Description)
	b = appendKnown(b, "leadAgentId", t.LeadAgentID)
	if t.Members != nil {
		ms, err := json.Marshal(t.Members)
		if err != nil {
			return nil, err
		}
		b = appendRaw(b, "members", ms)
	}
	return appendExtra(b, t.Extra)
}

// UnmarshalJSON decodes one member; see Team.UnmarshalJSON.
func (m *Member) UnmarshalJSON(data []byte) error {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil || f == nil {
		return errors.New("team member is not a JSON object")
	}
	*m = Member{Name: takeString(f, "name"), AgentID: takeString(f, "agentId"), AgentType: takeString(f, "agentType"), Model: takeString(f, "model"), Extra: f}
	return nil
}

// MarshalJSON encodes the member: agentId, name, agentType, model, then
// Extra sorted by key.
func (m Member) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	b = appendKnown(b, "agentId", m.AgentID)
	b = appendKnown(b, "name", m.Name)
	b = appendKnown(b, "agentType", m.AgentType)
	b = appendKnown(b, "model", m.Model)
	return appendExtra(b, m.Extra)
}

func takeString(f map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := f[key]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
		delete(f, key)
		return s
	}
	return ""
}

func appendKnown(b []byte, key, val string) []byte {
	if val == "" {
		return b
	}
	return appendRaw(b, key, appendString(nil, val))
}

func appendRaw(b []byte, key string, val []byte) []byte {
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = appendString(b, key)
	b = append(b, ':')
	return append(b, val...)
}

func appendExtra(b []byte, extra map[string]json.RawMessage) ([]byte, error) {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		v := bytes.TrimSpace(extra[k])
		if !json.Valid(v) {
			return nil, fmt.Errorf("extra field %q is not valid JSON", k)
		}
		b = appendRaw(b, k, v)
	}
	return append(b, '}'), nil
}

// TeamConfig reads {team}/config.json. It reads without a lock, as the atm
// CLI does: config writers replace the file atomically. A missing team or
// config is an error wrapping ErrTeamNotFound.
func (c *Client) TeamConfig(team string) (*Team, error) {
	dir, err := c.TeamDir(team)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q (no %s)", ErrTeamNotFound, team, path)
	}
	if err != nil {
		return nil, fmt.Errorf("read team config: %w", err)
	}
	var t Team
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("read team config %s: %w", path, err)
	}
	return &t, nil
}
