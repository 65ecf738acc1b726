package acp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/testlog"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
)

// guardArg makes the test binary run as the guard (as serve's
// codex-guard).
const guardArg = "acp-guard"

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == guardArg:
		os.Exit(guard.Main(os.Args[2:]))
	case os.Getenv("FAKEACP_SLEEPER") == "1":
		fakeSleeperMain()
	case os.Getenv("FAKEACP") == "1":
		fakeAgentMain()
	case os.Getenv(echoIdentityEnv) != "":
		echoServerMain()
	case os.Getenv("FAKEACP_PROXY") != "":
		os.Exit(fakeProxyMain())
	}
	os.Exit(m.Run())
}

// fakeConfig returns a Config that runs the fake agent with env, its log
// kept and shown when the test fails, and a check at the end of the test
// that no process of it is left.
func fakeConfig(t *testing.T, env ...string) acp.Config {
	t.Helper()
	mark := make([]byte, 8)
	rand.Read(mark)
	m := hex.EncodeToString(mark)
	t.Cleanup(func() { noProcessLeft(t, m) })
	return acp.Config{
		Command:       os.Args[0],
		Args:          []string{"-test.run=^$"},
		Env:           append([]string{"FAKEACP=1", "FAKEACP_MARK=" + m}, env...),
		Logger:        testLogger(t),
		StopGrace:     500 * time.Millisecond,
		CancelTimeout: 5 * time.Second,
	}
}

// start starts cfg's agent and closes it at the end of the test.
func start(t *testing.T, cfg acp.Config) *acp.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := acp.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func newSession(t *testing.T, c *acp.Client, p acp.SessionParams) *acp.Session {
	t.Helper()
	if p.Cwd == "" {
		p.Cwd = t.TempDir()
	}
	s, err := c.NewSession(context.Background(), p)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	return s
}

func prompt(t *testing.T, s *acp.Session, script ...string) *acp.TurnResult {
	t.Helper()
	res, err := s.Prompt(context.Background(), acp.TurnRequest{Text: strings.Join(script, "\n"), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return res
}

// testLogger keeps the log in memory and shows it when the test fails
// (or with ACPLOG set).
func testLogger(t *testing.T) *slog.Logger { return testlog.Logger(t, "ACPLOG") }

// processesWithMark returns the pids of live processes (zombies excluded)
// whose environment holds FAKEACP_MARK=mark.
func processesWithMark(mark string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("FAKEACP_MARK="+mark+"\x00")) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// noProcessLeft fails the test when a process of the fake agent (or one it
// started) is still alive a moment after the test's clients closed.
func noProcessLeft(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		pids := processesWithMark(mark)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of the agent left behind: %v", pids)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
