package acp_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// fakeProxyMain is a proxy in a process of its own: it starts the fake
// agent (through the guard when FAKEACP_PROXY=guard), has it start a child
// that ignores SIGTERM, says "ready PID" with the agent's child's pid and
// waits to be killed.
func fakeProxyMain() int {
	self, _ := os.Executable()
	// The agent outlives the end of its stdin, as agents that do not
	// watch it do: only the guard (or nothing) ends it with the proxy.
	cfg := acp.Config{Command: self, Args: []string{"-test.run=^$"}, Env: []string{"FAKEACP=1", "FAKEACP_IGNORE_EOF=1"}}
	if os.Getenv("FAKEACP_PROXY") == "guard" {
		cfg.Guard = []string{self, guardArg}
	}
	ctx := context.Background()
	c, err := acp.Start(ctx, cfg)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	s, err := c.NewSession(ctx, acp.SessionParams{Cwd: os.TempDir()})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	pidfile := filepath.Join(os.TempDir(), fmt.Sprintf("acp-proxy-%d", os.Getpid()))
	defer os.Remove(pidfile)
	if _, err := s.Prompt(ctx, acp.TurnRequest{Text: "spawn " + pidfile + "\nsay ok"}); err != nil {
		fmt.Println("error", err)
		return 1
	}
	b, _ := os.ReadFile(pidfile)
	fmt.Printf("ready %d %s\n", c.Status().PID, b)
	time.Sleep(time.Hour)
	return 0
}

// TestGuard: a proxy killed with SIGKILL leaves its agent (and what the
// agent started) running, unless the agent was started through the guard.
func TestGuard(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		t.Run(fmt.Sprintf("guard %v", guarded), func(t *testing.T) {
			t.Parallel()
			mode := "plain"
			if guarded {
				mode = "guard"
			}
			cfg := fakeConfig(t) // for its mark and the final check
			proxy := exec.Command(os.Args[0], "-test.run=^$")
			proxy.Env = append(os.Environ(), "FAKEACP_PROXY="+mode, cfg.Env[1])
			out, err := proxy.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := proxy.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			var agent, child int
			if _, err := fmt.Sscanf(line, "ready %d %d", &agent, &child); err != nil {
				proxy.Process.Kill()
				proxy.Wait()
				t.Fatalf("proxy said %q", line)
			}
			proxy.Process.Kill()
			proxy.Wait()
			mark := strings.TrimPrefix(cfg.Env[1], "FAKEACP_MARK=")
			if guarded {
				return // fakeConfig's cleanup checks that nothing with the mark is left
			}
			// Without the guard the agent and its child outlive the proxy:
			// what the guard is for. Clean up here.
			time.Sleep(300 * time.Millisecond)
			left := processesWithMark(mark)
			for _, pid := range []int{agent, child} {
				if !alive(pid) {
					t.Errorf("without the guard, %d died with the proxy (left: %v)", pid, left)
				}
			}
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
}
