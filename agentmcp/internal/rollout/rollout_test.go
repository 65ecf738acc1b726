package rollout

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestList(t *testing.T) {
	home := filepath.Join("testdata", "codexhome")
	got, err := List(home, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ThreadID, Cwd, Source, CLIVersion, FirstPrompt string }
	var rows []row
	for _, s := range got {
		rows = append(rows, row{s.ThreadID, s.Cwd, s.Source, s.CLIVersion, s.FirstPrompt})
	}
	want := []row{ // newest first
		{"01a1ffab-2d40-7811-aa2f-49dbf7d6b796", "/home/dev/codex-home-169/work", "vscode", "0.169.0", "hello from app-server probe"},
		{"01a1ffa7-aeb5-7ae2-b05c-5d2cac58c3bc", "/home/dev/codex-home-104/work", "mcp", "0.104.0", "hello from probe"},
		{"01a1ffa3-4381-7ec0-9a4c-6f81b0bbbcfd", "/home/dev/codex-home-153/work", "mcp", "0.153.4", "hello from probe"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	filtered, _ := List(home, Filter{Cwd: "/home/dev/codex-home-153", Limit: 5})
	if len(filtered) != 1 || filtered[0].CLIVersion != "0.153.4" {
		t.Errorf("cwd filter = %+v", filtered)
	}
	limited, _ := List(home, Filter{Limit: 1})
	if len(limited) != 1 || limited[0].CLIVersion != "0.169.0" {
		t.Errorf("limit = %+v", limited)
	}
	none, err := List(t.TempDir(), Filter{})
	if err != nil || len(none) != 0 {
		t.Errorf("empty home = %v, %v", none, err)
	}
}

func TestMessages(t *testing.T) {
	s, err := Find(filepath.Join("testdata", "codexhome"), "01a1ffa3-4381-7ec0-9a4c-6f81b0bbbcfd")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Messages(s.Path, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{"assistant", "MOCK_REPLY: second message"},
		{"user", "third message via conversationId"},
		{"assistant", "MOCK_REPLY: third message via conversationId"},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
