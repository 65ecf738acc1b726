//go:build unix

package testscripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestDoctorRealCodex runs `atm-agent-mcp doctor` against the real Codex
// (the pinned app-server version, installed by make test), whose `codex login status` decides the
// login check: exit 1 "Not logged in" in an empty CODEX_HOME, exit 0 once
// an API key is stored there. The codex check reads its version, the
// tested one (no warning), and names app-server.
func TestDoctorRealCodex(t *testing.T) {
	t.Parallel()
	codex := realcodex.Bin(t, realcodex.AppServer)
	home := t.TempDir()
	codexHome := filepath.Join(home, "codex-home")
	team := filepath.Join(home, ".claude", "teams", "dev")
	for _, d := range []string{codexHome, filepath.Join(team, "inboxes")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(team, "config.json"), []byte(`{"name":"dev","members":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	doctor := func() (string, int) {
		cmd := exec.Command("atm-agent-mcp", "doctor", "--team", "dev", "--codex-bin", codex)
		cmd.Dir = home
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ATM_HOME=" + home, "CODEX_HOME=" + codexHome,
			"GIT_CEILING_DIRECTORIES=" + filepath.Dir(home)}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	for _, step := range []struct {
		name     string
		auth     string // written to CODEX_HOME/auth.json first, unless ""
		wantCode int
		want     []string
	}{
		{"not logged in", "", 1, []string{
			`(?m)^ok +codex +.*/codex, Codex ` + regexp.QuoteMeta(realcodex.AppServer.Pinned()) + `, driven as app-server \(chosen by its version\)$`,
			`(?m)^missing +login +Codex is not logged in \(codex login status: Not logged in; CODEX_HOME .*codex-home\)$`,
			`(?m)fix: codex login \(with ChatGPT\), or printenv OPENAI_API_KEY \| codex login --with-api-key`,
		}},
		{"API key stored", `{"OPENAI_API_KEY":"sk-test-offline"}`, 0, []string{
			`(?m)^ok +login +API key configured`,
		}},
	} {
		if step.auth != "" {
			if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(step.auth), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out, code := doctor()
		if step.wantCode >= 0 && code != step.wantCode {
			t.Errorf("%s: exit %d, want %d\n%s", step.name, code, step.wantCode, out)
		}
		for _, re := range step.want {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%s: the report does not match %s:\n%s", step.name, re, out)
			}
		}
	}
}
