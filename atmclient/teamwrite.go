package atmclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
)

// JoinTeam adds m to the members of team's config.json, or replaces the
// member with the same Name (in its place). m.AgentID "" means
// Name@team. Claude Code keeps only members with a string agentId and
// name; other keys (joinedAt, cwd, backendType, …) go in m.Extra. Every
// other key of the file and of the other members keeps its value (and its
// order; whitespace may change). The write takes the locks of both other
// writers of the file, {team}/config.lock (flock, the atm CLI's) and
// {team}/config.json.lock (a directory, Claude Code's), then replaces the
// file by a rename. A missing team directory or config.json is an error
// wrapping ErrTeamNotFound: JoinTeam never creates a team. The team's lead
// (the member whose agentId is the file's leadAgentId) is never replaced:
// that is an error wrapping ErrInvalidName.
func (c *Client) JoinTeam(ctx context.Context, team string, m Member) error {
	if err := ValidateName("agent", m.Name); err != nil {
		return fmt.Errorf("join team: %w", err)
	}
	if m.AgentID == "" {
		m.AgentID = m.Name + "@" + team
	}
	elem, err := m.MarshalJSON()
	if err != nil {
		return fmt.Errorf("join team: %w", err)
	}
	err = c.updateTeam(ctx, team, func(members []json.RawMessage, lead string) ([]json.RawMessage, bool, error) {
		for i, raw := range members {
			if name, id := memberIDs(raw); name == m.Name {
				if lead != "" && id == lead {
					return nil, false, fmt.Errorf("%w: %q is the team's lead", ErrInvalidName, m.Name)
				}
				out := append([]json.RawMessage(nil), members...)
				out[i] = elem
				return out, true, nil
			}
		}
		return append(members[:len(members):len(members)], elem), true, nil
	})
	if err != nil {
		return fmt.Errorf("join team %s as %s: %w", team, m.Name, err)
	}
	return nil
}

// LeaveTeam removes every member called name from team's config.json,
// under the same locks as JoinTeam; nothing is written when there is none.
// The team's lead is never removed (an error wrapping ErrInvalidName).
// A missing team is an error wrapping ErrTeamNotFound (a team that Claude
// Code deleted when its lead exited has no members left to remove).
func (c *Client) LeaveTeam(ctx context.Context, team, name string) error {
	if err := ValidateName("agent", name); err != nil {
		return fmt.Errorf("leave team: %w", err)
	}
	err := c.updateTeam(ctx, team, func(members []json.RawMessage, lead string) ([]json.RawMessage, bool, error) {
		var out []json.RawMessage
		for _, raw := range members {
			n, id := memberIDs(raw)
			if n != name {
				out = append(out, raw)
			} else if lead != "" && id == lead {
				return nil, false, fmt.Errorf("%w: %q is the team's lead", ErrInvalidName, name)
			}
		}
		return out, len(out) != len(members), nil
	})
	if err != nil {
		return fmt.Errorf("leave team %s as %s: %w", team, name, err)
	}
	return nil
}

// memberIDs returns the string "name" and "agentId" of a member element
// ("" when absent or not strings).
func memberIDs(raw json.RawMessage) (name, agentID string) {
	var m struct {
		Name    any `json:"name"`
		AgentID any `json:"agentId"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return "", ""
	}
	name, _ = m.Name.(string)
	agentID, _ = m.AgentID.(string)
	return name, agentID
}

// memberEdit computes the new members of a team from the current ones and
// the file's leadAgentId; false means there is nothing to write.
type memberEdit func(members []json.RawMessage, lead string) ([]json.RawMessage, bool, error)

// updateTeam rewrites the members of team's config.json with edit under
// both config locks.
func (c *Client) updateTeam(ctx context.Context, team string, edit memberEdit) error {
	dir, err := c.TeamDir(team)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "config.json")
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %q (no %s)", ErrTeamNotFound, team, path)
		}
		return fmt.Errorf("read team config: %w", err)
	}
	unlock, err := c.lockBoth(ctx, filepath.Join(dir, "config.lock"), path+".lock", nil)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %q (no %s)", ErrTeamNotFound, team, dir)
		}
		return fmt.Errorf("lock team config: %w", err)
	}
	defer unlock()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %q (no %s)", ErrTeamNotFound, team, path)
	}
	if err != nil {
		return fmt.Errorf("read team config: %w", err)
	}
	out, changed, err := editMembers(data, edit)
	if err != nil {
		return err
	}
	if !changed {
		return nil
	}
	if err := replaceFile(path, out); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %q (its directory is gone): %v", ErrTeamNotFound, team, err)
		}
		return err
	}
	return nil
}

// editMembers applies edit to the "members" array of the JSON object data
// (a missing one is empty and added last) and returns the object indented
// by two spaces, every other key and value in its order.
func editMembers(data []byte, edit memberEdit) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, errors.New("team config is not a JSON object")
	}
	type kv struct {
		key string
		val json.RawMessage
	}
	var fields []kv
	at := -1
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false, err
		}
		if key == "members" {
			at = len(fields)
		}
		fields = append(fields, kv{key, val})
	}
	var members []json.RawMessage
	var lead string
	for _, f := range fields {
		switch f.key {
		case "members":
			if err := json.Unmarshal(f.val, &members); err != nil {
				return nil, false, fmt.Errorf("team config members is not an array: %w", err)
			}
		case "leadAgentId":
			json.Unmarshal(f.val, &lead)
		}
	}
	members, changed, err := edit(members, lead)
	if err != nil || !changed {
		return nil, false, err
	}
	arr := []byte{'['}
	for i, m := range members {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, m...)
	}
	arr = append(arr, ']')
	if at < 0 {
		fields = append(fields, kv{"members", arr})
	} else {
		fields[at].val = arr
	}
	obj := []byte{'{'}
	for _, f := range fields {
		obj = appendRaw(obj, f.key, f.val)
	}
	obj = append(obj, '}')
	var out bytes.Buffer
	if err := json.Indent(&out, obj, "", "  "); err != nil {
		return nil, false, err
	}
	return out.Bytes(), true, nil
}

// replaceFile replaces path with data: a dot-prefixed temporary file in the
// same directory (mode of the old file), fsynced, renamed over path, and
// the directory fsynced.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fsx.SyncDir(dir)
}
