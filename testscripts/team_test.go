package testscripts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// makeTeam creates the ATM team "dev" with members under the ATM home
// atmHome (config.json and an empty inboxes folder) and returns the team's
// directory.
func makeTeam(t *testing.T, atmHome string, members ...string) string {
	t.Helper()
	dir := filepath.Join(atmHome, ".claude", "teams", "dev")
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o755); err != nil {
		t.Fatal(err)
	}
	var ms []map[string]string
	for _, m := range members {
		ms = append(ms, map[string]string{"name": m, "agentId": m + "@dev"})
	}
	b, _ := json.Marshal(map[string]any{"name": "dev", "members": ms})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
