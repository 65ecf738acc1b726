package acp_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// TestLoadResume: a session of one agent process is reopened in a new
// process with session/load (the replayed history is kept, not taken for a
// turn) and with session/resume (no replay), and takes turns there.
func TestLoadResume(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cfg := fakeConfig(t, "FAKEACP_STATE="+state)
	c1 := start(t, cfg)
	if caps := c1.Info().Capabilities; !caps.LoadSession || !caps.Resume || !caps.Close {
		t.Fatalf("capabilities %+v, want load, resume and close", caps)
	}
	s1 := newSession(t, c1, acp.SessionParams{})
	prompt(t, s1, "say one")
	prompt(t, s1, "say two")
	id := s1.ID()
	if err := c1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	log := &eventLog{}
	cfg.OnEvent = log.add
	c2 := start(t, cfg)
	s2, err := c2.LoadSession(t.Context(), id, acp.SessionParams{Cwd: t.TempDir(), Mode: "default"})
	if err != nil {
		t.Fatalf("LoadSession: %v", err)
	}
	want := []acp.Message{{Role: "user", Text: "say one"}, {Role: "agent", Text: "one"}, {Role: "user", Text: "say two"}, {Role: "agent", Text: "two"}}
	if diff := cmp.Diff(want, s2.Replayed()); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	res := prompt(t, s2, "say three")
	if res.Text != "three" || res.Turn != 1 || len(res.Messages) != 1 {
		t.Errorf("turn after load %+v, want only its own text", res)
	}
	if err := s2.Close(t.Context()); err != nil {
		t.Errorf("session Close: %v", err)
	}
	if _, err := s2.Prompt(t.Context(), acp.TurnRequest{Text: "say four"}); err == nil {
		t.Errorf("Prompt on a closed session succeeded")
	}
	c2.Close(t.Context())
	replays := 0
	for _, ev := range log.evs {
		if ev.Replay {
			replays++
		}
	}
	if replays != 4 {
		t.Errorf("%d replay events, want 4", replays)
	}

	c3 := start(t, cfg)
	s3, err := c3.ResumeSession(t.Context(), id, acp.SessionParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatalf("ResumeSession: %v", err)
	}
	if got := s3.Replayed(); len(got) != 0 {
		t.Errorf("resume replayed %v", got)
	}
	if res := prompt(t, s3, "say five"); res.Text != "five" {
		t.Errorf("turn after resume: %q", res.Text)
	}
	if _, err := c3.LoadSession(t.Context(), "ses_unknown", acp.SessionParams{Cwd: t.TempDir()}); !errors.Is(err, acp.ErrResourceNotFound) {
		t.Errorf("LoadSession of an unknown id: %v, want ErrResourceNotFound", err)
	}
}

// TestReopenUnsupported: an agent that does not advertise load or resume
// is not asked.
func TestReopenUnsupported(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t))
	if _, err := c.LoadSession(t.Context(), "x", acp.SessionParams{Cwd: t.TempDir()}); !errors.Is(err, acp.ErrUnsupported) {
		t.Errorf("LoadSession: %v, want ErrUnsupported", err)
	}
	if _, err := c.ResumeSession(t.Context(), "x", acp.SessionParams{Cwd: t.TempDir()}); !errors.Is(err, acp.ErrUnsupported) {
		t.Errorf("ResumeSession: %v, want ErrUnsupported", err)
	}
	if _, err := c.NewSession(t.Context(), acp.SessionParams{Cwd: "relative"}); err == nil {
		t.Errorf("NewSession with a relative cwd succeeded")
	}
}

// TestMCPServerJSON: the MCP server entries of session/new have the
// schema's shapes (stdio: no type, args and env arrays; http: type, url,
// headers).
func TestMCPServerJSON(t *testing.T) {
	tests := []struct {
		in   acp.MCPServer
		want string
	}{
		{acp.MCPServer{Name: "teammail", Command: "/usr/bin/atm-agent-mcp"},
			`{"name":"teammail","command":"/usr/bin/atm-agent-mcp","args":[],"env":[]}`},
		{acp.MCPServer{Name: "teammail", Command: "/bin/x", Args: []string{"mail", "--as", "bob"}, Env: []acp.NameValue{{Name: "ATM_HOME", Value: "/h"}}},
			`{"name":"teammail","command":"/bin/x","args":["mail","--as","bob"],"env":[{"name":"ATM_HOME","value":"/h"}]}`},
		{acp.MCPServer{Type: "http", Name: "teammail", URL: "http://127.0.0.1:9/mcp"},
			`{"type":"http","name":"teammail","url":"http://127.0.0.1:9/mcp","headers":[]}`},
		{acp.MCPServer{Type: "http", Name: "t", URL: "http://h/", Headers: []acp.NameValue{{Name: "Authorization", Value: "Bearer x"}}},
			`{"type":"http","name":"t","url":"http://h/","headers":[{"name":"Authorization","value":"Bearer x"}]}`},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestAuthenticate: an agent that needs authenticate answers session/new
// with auth_required until the client authenticates with a method it
// offers; a method it does not offer fails the handshake.
func TestAuthenticate(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t, "FAKEACP_AUTH=1"))
	if got := c.Info().AuthMethods; len(got) != 1 || got[0].ID != "mock-key" {
		t.Errorf("auth methods %+v", got)
	}
	if _, err := c.NewSession(t.Context(), acp.SessionParams{Cwd: t.TempDir()}); !errors.Is(err, acp.ErrAuthRequired) {
		t.Errorf("NewSession without authenticate: %v, want ErrAuthRequired", err)
	}
	cfg := fakeConfig(t, "FAKEACP_AUTH=1")
	cfg.AuthMethod = "mock-key"
	newSession(t, start(t, cfg), acp.SessionParams{})
	cfg.AuthMethod = "oauth"
	if _, err := acp.Start(t.Context(), cfg); !errors.Is(err, acp.ErrHandshake) {
		t.Errorf("Start with a method not offered: %v, want ErrHandshake", err)
	}
}

// TestConfigOption: SessionParams.ConfigOptions are set with
// session/set_config_option; the agent's refusal is the session's error.
func TestConfigOption(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	cfg := fakeConfig(t)
	cfg.OnEvent = log.add
	c := start(t, cfg)
	s := newSession(t, c, acp.SessionParams{ConfigOptions: []acp.ConfigOption{{ID: "model", Value: "mock-model"}}})
	if err := s.SetConfigOption(t.Context(), "sandbox", "off"); err == nil {
		t.Errorf("an option the agent does not have was set")
	}
	c.Close(t.Context())
	found := false
	for _, ev := range log.evs {
		found = found || (ev.Kind == acp.EventConfigOptions && ev.SessionID == s.ID())
	}
	if !found {
		t.Errorf("no config_option_update after session/set_config_option")
	}
}
