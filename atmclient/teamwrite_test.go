package atmclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
	"github.com/google/go-cmp/cmp"
)

// sessionConfig is config.json as Claude Code 2.1.332 writes it for its
// session team (the note, §1.2), plus keys nobody models.
const sessionConfig = `{"name":"session-c637aa76","createdAt":1795603737158,"leadAgentId":"team-lead@session-c637aa76",
 "leadSessionId":"c637aa76-882b-4e7a-9d55-0d6c7c1e2f3a","leadProcess":{"pid":10124,"pidSpace":"vm#pid:[x]","claimedAt":1795603737158,"procStart":"173372"},
 "members":[{"agentId":"team-lead@session-c637aa76","name":"team-lead","agentType":"team-lead","joinedAt":1795603737158,
             "tmuxPaneId":"leader","cwd":"/w","subscriptions":[],"backendType":"in-process"},
            {"agentId":"helper@session-c637aa76","name":"helper","color":"blue","joinedAt":1795603737200,"tmuxPaneId":"in-process","subscriptions":[],"agentType":"general-purpose","model":"claude-opus-5-5","planModeRequired":false,"cwd":"/w","backendType":"in-process","future":{"a":[1,2.50,"<&>"]}}],
 "zzFuture":[true,null]}`

// sessionTeam writes sessionConfig as team session-c637aa76 and returns
// the config path.
func sessionTeam(t *testing.T, c *Client) string {
	t.Helper()
	dir := filepath.Join(c.Home(), ".claude", "teams", "session-c637aa76")
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(sessionConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// topKeys returns the top-level keys of a JSON object in order.
func topKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token()
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		dec.Decode(&v)
	}
	return keys
}

func codexMember(name, agentType string) Member {
	return Member{Name: name, AgentType: agentType, Extra: map[string]json.RawMessage{
		"joinedAt": raw("1795603740000"), "cwd": raw(`"/w/repo"`), "backendType": raw(`"atm-agent-mcp"`),
	}}
}

func TestJoinAndLeaveTeam(t *testing.T) {
	c, _ := newTestHome(t)
	path := sessionTeam(t, c)
	const team = "session-c637aa76"
	var orig map[string]any
	jsonUnmarshal(t, []byte(sessionConfig), &orig)
	origMembers := orig["members"].([]any)

	members := func() []any {
		t.Helper()
		var got map[string]any
		data := mustRead(t, path)
		jsonUnmarshal(t, data, &got)
		ms := got["members"].([]any)
		delete(got, "members")
		want := map[string]any{}
		for k, v := range orig {
			if k != "members" {
				want[k] = v
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("other keys of config.json changed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(topKeys(t, []byte(sessionConfig)), topKeys(t, data)); diff != "" {
			t.Errorf("key order of config.json changed (-want +got):\n%s", diff)
		}
		return ms
	}

	if err := c.JoinTeam(bg, team, codexMember("codex1", "codex")); err != nil {
		t.Fatal(err)
	}
	want := append(append([]any(nil), origMembers...), map[string]any{
		"agentId": "codex1@" + team, "name": "codex1", "agentType": "codex",
		"joinedAt": 1795603740000.0, "cwd": "/w/repo", "backendType": "atm-agent-mcp",
	})
	if diff := cmp.Diff(want, members()); diff != "" {
		t.Errorf("members after JoinTeam (-want +got):\n%s", diff)
	}
	cfg, err := c.TeamConfig(team)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := cfg.Member("codex1"); !ok || m.AgentID != "codex1@"+team {
		t.Errorf("TeamConfig member codex1 = %+v, %v", m, ok)
	}

	// Joining again replaces the member in place.
	if err := c.JoinTeam(bg, team, Member{Name: "codex1", AgentID: "codex1@elsewhere", AgentType: "codex-2"}); err != nil {
		t.Fatal(err)
	}
	want[2] = map[string]any{"agentId": "codex1@elsewhere", "name": "codex1", "agentType": "codex-2"}
	if diff := cmp.Diff(want, members()); diff != "" {
		t.Errorf("members after a second JoinTeam (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("config.json mode after rewrites = %v, %v; want the original 0644", fi.Mode(), err)
	}

	if err := c.LeaveTeam(bg, team, "codex1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(origMembers, members()); diff != "" {
		t.Errorf("members after LeaveTeam (-want +got):\n%s", diff)
	}
	before, _ := os.Stat(path)
	if err := c.LeaveTeam(bg, team, "codex1"); err != nil {
		t.Errorf("LeaveTeam of an absent member: %v", err)
	}
	if after, _ := os.Stat(path); !os.SameFile(before, after) {
		t.Errorf("LeaveTeam of an absent member rewrote config.json")
	}
	dir := filepath.Dir(path)
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	var names []string
	for _, p := range append(left, hidden...) {
		names = append(names, filepath.Base(p))
	}
	if diff := cmp.Diff([]string{"config.json", "config.lock", "inboxes"}, names); diff != "" {
		t.Errorf("team directory after the writes (-want +got; no lock directory or temporary file may stay):\n%s", diff)
	}
}

func TestJoinTeamMissing(t *testing.T) {
	c, home := newTestHome(t)
	if err := os.MkdirAll(filepath.Join(home, ".claude", "teams", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, team := range []string{"nosuch", "empty"} {
		if err := c.JoinTeam(bg, team, Member{Name: "codex1"}); !errors.Is(err, ErrTeamNotFound) {
			t.Errorf("JoinTeam(%s) error = %v, want ErrTeamNotFound", team, err)
		}
		if err := c.LeaveTeam(bg, team, "codex1"); !errors.Is(err, ErrTeamNotFound) {
			t.Errorf("LeaveTeam(%s) error = %v, want ErrTeamNotFound", team, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "teams", "nosuch")); err == nil {
		t.Error("JoinTeam created a missing team")
	}
	if err := c.JoinTeam(bg, "dev", Member{Name: "../x"}); err == nil {
		t.Error("JoinTeam accepted a bad member name")
	}
}

// The lead's member entry is Claude Code's own: neither replaced nor
// removed.
func TestJoinTeamKeepsTheLead(t *testing.T) {
	c, _ := newTestHome(t)
	path := sessionTeam(t, c)
	before := mustRead(t, path)
	if err := c.JoinTeam(bg, "session-c637aa76", Member{Name: "team-lead", AgentType: "codex"}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("JoinTeam as the lead: %v, want ErrInvalidName", err)
	}
	if err := c.LeaveTeam(bg, "session-c637aa76", "team-lead"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("LeaveTeam of the lead: %v, want ErrInvalidName", err)
	}
	if after := mustRead(t, path); !bytes.Equal(before, after) {
		t.Errorf("config.json changed:\n%s", after)
	}
	if err := c.LeaveTeam(bg, "session-c637aa76", "helper"); err != nil {
		t.Errorf("LeaveTeam of a teammate: %v", err)
	}
}

// The team config write waits for either lock and gives up after
// LockTimeout.
func TestJoinTeamWaitsForBothLocks(t *testing.T) {
	c, _ := newTestHome(t)
	path := sessionTeam(t, c)
	c.lockTimeout = 40 * time.Millisecond
	for _, which := range []string{"claude code's lock directory", "atm cli's flock"} {
		t.Run(which, func(t *testing.T) {
			var release func()
			if which == "atm cli's flock" {
				l, err := fsx.Lock(bg, filepath.Join(filepath.Dir(path), "config.lock"), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				release = func() { l.Close() }
			} else {
				if err := os.Mkdir(path+".lock", 0o700); err != nil {
					t.Fatal(err)
				}
				release = func() { os.Remove(path + ".lock") }
			}
			if err := c.JoinTeam(bg, "session-c637aa76", Member{Name: "codex1"}); !errors.Is(err, ErrLockTimeout) {
				t.Errorf("JoinTeam while %s is held: %v, want ErrLockTimeout", which, err)
			}
			release()
			if err := c.JoinTeam(bg, "session-c637aa76", Member{Name: "codex1"}); err != nil {
				t.Errorf("JoinTeam after release: %v", err)
			}
		})
	}
}

// Concurrent JoinTeams and a Claude Code-style team-file writer (mkdir
// config.json.lock, read, add a member, temp file + rename, rmdir) lose no
// member.
func TestJoinTeamConcurrent(t *testing.T) {
	c, _ := newTestHome(t)
	path := sessionTeam(t, c)
	c.lockTimeout = 10 * time.Second
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	want := map[string]bool{"team-lead": true, "helper": true}
	gaveUp := 0
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("codex%d", i)
			if err := c.JoinTeam(bg, "session-c637aa76", Member{Name: name}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			want[name] = true
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("claude%d", i)
			err := claudeAddMember(path, name)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errClaudeLocked):
				gaveUp++ // Claude Code reports the failure; nothing was written
			case err != nil:
				t.Error(err)
			default:
				want[name] = true
			}
		}()
	}
	wg.Wait()
	cfg, err := c.TeamConfig("session-c637aa76")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range cfg.Members {
		got[m.Name] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	t.Logf("%d members; the Claude Code writer gave up %d times", len(got), gaveUp)
}

// claudeAddMember adds a member to config.json as Claude Code does: under
// its lock directory (10 retries, 5–100 ms), then a temp file renamed over
// the file.
func claudeAddMember(path, name string) error {
	unlock, err := claudeLock(context.Background(), path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	var cfg map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return err
	}
	cfg["members"] = append(cfg["members"].([]any), map[string]any{"agentId": name + "@x", "name": name})
	out, _ := json.MarshalIndent(cfg, "", "  ")
	tmp := path + fmt.Sprintf(".tmp.%d", time.Now().UnixNano())
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Claude Code deletes its session team when the lead exits. A write that
// finds the team gone fails with ErrTeamNotFound and never brings back a
// directory of the team.
func TestTeamVanishes(t *testing.T) {
	c, home := newTestHome(t, "codex1")
	dir := filepath.Join(home, ".claude", "teams", "dev")
	path := inboxPath(t, c, "dev", "codex1")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// update is what every inbox write ends in, past the checks that the
	// team exists: the team can vanish between those and the write.
	_, err := c.update(bg, path, func(cur []*entry) ([]*entry, []*entry, error) { return nil, nil, nil })
	if !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("write to a vanished team: %v, want ErrTeamNotFound", err)
	}
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "codex1", Text: "x"}); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("Send to a vanished team: %v, want ErrTeamNotFound", err)
	}
	if _, err := c.MarkRead(bg, "dev", "codex1", "id:x"); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("MarkRead in a vanished team: %v, want ErrTeamNotFound", err)
	}
	if err := c.LeaveTeam(bg, "dev", "codex1"); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("LeaveTeam of a vanished team: %v, want ErrTeamNotFound", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a write brought back the team directory %s", dir)
	}
}
