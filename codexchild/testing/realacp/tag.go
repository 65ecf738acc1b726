package realacp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TagEnv is the environment variable that marks the processes of one
// test's agents (the agent, the tools it runs, the MCP servers it starts
// inherit it), so that the test can find the ones left behind.
const TagEnv = "ATM_REALACP_TAG"

// leakGrace is how long processes may take to go after the agents closed.
const leakGrace = 5 * time.Second

// Tag returns a fresh tag: put TagEnv+"="+tag into the agent's environment
// (and into the MCP servers' it is given). At the end of the test, a
// process that still carries the tag after a grace fails the test and is
// killed.
func Tag(t testing.TB) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	tag := hex.EncodeToString(b)
	t.Cleanup(func() {
		left := Leftover(tag, leakGrace)
		if len(left) == 0 {
			return
		}
		t.Errorf("realacp: %d process(es) of the agents still alive %s after the test; killing them:\n%s",
			len(left), leakGrace, strings.Join(left, "\n"))
		for _, p := range left {
			pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return tag
}

// Leftover returns the live processes (zombies excluded) that carry tag
// once none is left or grace has passed, as "pid: command line". It reads
// /proc, so it finds nothing where there is none (macOS).
func Leftover(tag string, grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	for {
		left := tagged(tag)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tagged(tag string) []string {
	mark := []byte(TagEnv + "=" + tag)
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		env, err := os.ReadFile(filepath.Join(base, "environ"))
		if err != nil || len(env) == 0 {
			continue // gone, not ours, or a zombie
		}
		if !bytes.Contains(append([]byte{0}, env...), append(append([]byte{0}, mark...), 0)) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		found = append(found, fmt.Sprintf("%d: %s", pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))))
	}
	return found
}
