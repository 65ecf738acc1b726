//go:build unix

package testscripts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestClaudeCodeCachedFailure: the real Claude Code 2.1.332, headless and
// offline, with our plugin installed in its HOME as a user installs it,
// caches a failure of our server in ~/.claude/mcp-needs-auth-cache.json
// (here serve fails on a broken configuration file) and then starts the
// next session without it, although the cause is gone. doctor reads the
// file Claude Code wrote, says so and names the file to delete; once it is
// deleted as doctor says, doctor is content and the next session has our
// server connected (issue 37).
func TestClaudeCodeCachedFailure(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	dir, home, work := pluginHome(t, claude)
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead")
	broken := filepath.Join(dir, "broken.toml")
	if err := os.WriteFile(broken, []byte("this is [not toml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serveEnv := []string{"ATM_HOME=" + atmHome, "ATM_TEAM=dev", "ATM_AGENT_MCP_CODEX_BIN=mockcodex", "GIT_CEILING_DIRECTORIES=" + dir}
	// session runs claude -p (the model says one line) with a debug log
	// of its own, and returns our server's status in its init message and
	// the log. Claude Code connects MCP servers in the background and
	// prints init after a bounded wait (about 2 s): a server that settles
	// later is "pending" there, and is abandoned when the one-line session
	// ends first (Claude Code starts a server that closes before
	// initialize again, after its version negotiation probe; each start
	// runs the launcher's plugin-version probe and the race-built serve,
	// slow under load; see claudecode_connect_test.go). With settle, the model
	// answers only once the log shows how our server's connection ended,
	// as a session that someone types into outlasts it; so what the log
	// and the cache file say does not hang on the machine's load.
	runs := 0
	session := func(settle bool, extra ...string) (string, string, *claudeP) {
		t.Helper()
		runs++
		debugLog := filepath.Join(dir, fmt.Sprintf("claude-debug-%d.log", runs))
		api := startAnthropicMock(t, []mockStep{func([]mockResult) []mockBlock {
			if settle {
				awaitVerdict(debugLog, pluginServer)
			}
			return []mockBlock{{Text: "nothing to do"}}
		}})
		cp := runClaudeP(t, claude, work, claudeEnv(home, api.URL(), append(serveEnv, extra...)...), "Say hello.",
			"--output-format", "stream-json", "--verbose", "--debug-file", debugLog)
		if cp.err != nil {
			cp.dump(t, debugLog)
			t.Fatalf("claude -p: %v", cp.err)
		}
		for _, line := range bytes.Split(cp.stdout.Bytes(), []byte("\n")) {
			var init struct {
				Subtype    string `json:"subtype"`
				MCPServers []struct {
					Name, Status string
				} `json:"mcp_servers"`
			}
			if json.Unmarshal(line, &init) != nil || init.Subtype != "init" {
				continue
			}
			for _, s := range init.MCPServers {
				if s.Name == "plugin:atm-agent-mcp:codex" {
					return s.Status, debugLog, cp
				}
			}
		}
		return "", debugLog, cp
	}
	cacheFile := filepath.Join(home, ".claude", "mcp-needs-auth-cache.json")
	doctor := func() (string, int) {
		t.Helper()
		cmd := exec.Command("atm-agent-mcp", "doctor", "--team", "dev", "--codex-bin", "mockcodex")
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ATM_HOME=" + atmHome, "GIT_CEILING_DIRECTORIES=" + dir}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}

	// serve fails: Claude Code sees it fail and caches it.
	status, debugLog, cp := session(true, "ATM_CONFIG="+broken)
	if got := serverVerdicts(debugLog); len(got) == 0 || !strings.Contains(got[0], ourServer+"Connection failed") {
		cp.dump(t)
		logTail(t, "claude's debug log (our server)", debugLog, 0, ourServer)
		t.Fatalf("with a broken configuration, Claude Code's verdicts on our server are %q (init: %q), want a failure first", got, status)
	}
	t.Logf("init said our server was %q; Claude Code's log: %s", status, serverVerdicts(debugLog)[0])
	cache, err := os.ReadFile(cacheFile)
	if err != nil || !bytes.Contains(cache, []byte(`"plugin:atm-agent-mcp:codex"`)) {
		t.Fatalf("Claude Code cached no failure of our server (%v): %s", err, cache)
	}
	t.Logf("%s: %s", filepath.Base(cacheFile), cache)

	// The configuration is fixed, yet the next session goes without us:
	// Claude Code calls our server failed at once and never starts it.
	status, debugLog, cp = session(false)
	if started := grepLines(debugLog, ourServer+"Starting connection"); status != "failed" || len(started) > 0 {
		cp.dump(t)
		t.Errorf("the session after the failure has our server %q and started it %d times, want failed and never: the cache no longer holds it back (Claude Code changed?)",
			status, len(started))
	}

	// doctor reads what Claude Code wrote.
	out, code := doctor()
	missing := regexp.MustCompile(`(?m)^missing +claude-cache +plugin:atm-agent-mcp:codex failed at [0-9:]+: Claude Code starts sessions without it until [0-9:]+ \(` +
		regexp.QuoteMeta(cacheFile) + "; `claude mcp list` still says Connected\\)$")
	fix := regexp.MustCompile(`(?m)^ +fix: .*or delete the file: rm (\S+) \(it holds only`)
	m := fix.FindStringSubmatch(out)
	if code != 1 || !missing.MatchString(out) || m == nil || m[1] != cacheFile {
		cp.dump(t)
		t.Fatalf("doctor after Claude Code cached the failure (exit %d):\n%s", code, out)
	}

	// Its fix, as it says it.
	if err := os.Remove(m[1]); err != nil {
		t.Fatal(err)
	}
	out, _ = doctor()
	if !regexp.MustCompile(`(?m)^ok +claude-cache +Claude Code has cached no failure`).MatchString(out) {
		t.Errorf("doctor after its fix:\n%s", out)
	}
	status, debugLog, cp = session(true)
	if got := serverVerdicts(debugLog); len(got) == 0 || !strings.Contains(got[0], ourServer+"Successfully connected") {
		cp.dump(t)
		logTail(t, "claude's debug log (our server)", debugLog, 0, ourServer)
		t.Errorf("after doctor's fix, Claude Code's verdicts on our server are %q (init: %q), want a connection first", got, status)
	} else {
		t.Logf("init said our server was %q; Claude Code's log: %s", status, got[0])
	}
}
