package workspace

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// helperMain is a serve stand-in for the chaos tests, run as a child
// process of the test binary and killed with SIGKILL:
//
//   - "hold": makes WORKSPACE_TEST_N worktrees of the repository
//     WORKSPACE_TEST_REPO, gives each an uncommitted edit (every other one
//     a commit too), prints their places as JSON and waits to be killed;
//   - "merge": merges the agent WORKSPACE_TEST_AGENT (a JSON Place) with a
//     check that never ends, printing "checking" once the check runs.
func helperMain(mode string) int {
	ctx := context.Background()
	m, err := New(ctx, Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "hold":
		repo := os.Getenv("WORKSPACE_TEST_REPO")
		n, _ := strconv.Atoi(os.Getenv("WORKSPACE_TEST_N"))
		var places []*Place
		for i := range n {
			id := "agent" + strconv.Itoa(i)
			p, err := m.Create(ctx, Request{AgentID: "codex-" + id, Identity: id, Cwd: repo})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			f := filepath.Join(p.Path, "work-"+id+".txt")
			if err := os.WriteFile(f, []byte("unsaved work of "+id+"\n"), 0o644); err != nil {
				return 1
			}
			if i%2 == 1 {
				for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "committed by " + id}} {
					cmd := exec.Command("git", args...)
					cmd.Dir = p.Path
					if out, err := cmd.CombinedOutput(); err != nil {
						fmt.Fprintln(os.Stderr, string(out))
						return 1
					}
				}
				os.WriteFile(filepath.Join(p.Path, "a.txt"), []byte("uncommitted edit of "+id+"\n"), 0o644)
			}
			places = append(places, p)
		}
		json.NewEncoder(os.Stdout).Encode(places)
	case "merge":
		var p Place
		if err := json.Unmarshal([]byte(os.Getenv("WORKSPACE_TEST_AGENT")), &p); err != nil {
			return 1
		}
		check := "echo $$ > " + os.Getenv("WORKSPACE_TEST_PIDFILE") + "; exec sleep 600"
		_, err := m.Merge(ctx, MergeRequest{Place: &p, Author: Signature{"a", "a@t"}, Check: check,
			Progress: func(pr Progress) {
				if pr.Phase == "check" && strings.HasPrefix(pr.Line, "running") {
					go func() { // once the check's shell runs
						for readMaybe(os.Getenv("WORKSPACE_TEST_PIDFILE")) == "" {
							time.Sleep(10 * time.Millisecond)
						}
						fmt.Println("checking")
					}()
				}
			}})
		fmt.Fprintln(os.Stderr, "merge returned:", err)
		return 1
	default:
		return 2
	}
	select {} // until killed
}

// startHelper starts the test binary in a helper mode and returns it with
// its first line of output.
func startHelper(t *testing.T, mode string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "WORKSPACE_TEST_HELPER="+mode)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s == "" {
			t.Fatalf("helper %s printed nothing", mode)
		}
		return cmd, s
	case <-time.After(60 * time.Second):
		t.Fatalf("helper %s is not ready", mode)
	}
	return nil, ""
}

func readMaybe(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// kill9 kills the helper with SIGKILL and reaps it.
func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// TestChaosServeKilled: a serve holding five worktrees with unsaved work
// is killed with SIGKILL. Every worktree is then listed as orphaned (its
// lock's pid is gone: resumable, not foreign), prune keeps every one
// (they are dirty), a new serve re-enters each, and no edit is lost.
func TestChaosServeKilled(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "base\n"})
	const n = 5
	cmd, line := startHelper(t, "hold", "WORKSPACE_TEST_REPO="+repo, "WORKSPACE_TEST_N="+strconv.Itoa(n))
	var places []*Place
	if err := json.Unmarshal([]byte(line), &places); err != nil || len(places) != n {
		t.Fatalf("helper output %q: %v", line, err)
	}
	kill9(t, cmd)

	ctx := context.Background()
	m := newManager(t, Owner{})
	list, err := m.List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range list {
		got = append(got, fmt.Sprintf("%s %s resumable=%v dirty=%d ahead=%d pid=%d", w.Name, w.State, w.Resumable, w.Dirty, w.Ahead, w.Owner.PID))
	}
	var want []string
	for i := range n {
		dirty, ahead := 1, 0
		if i%2 == 1 {
			ahead = 1
		}
		want = append(want, fmt.Sprintf("agent%d orphaned resumable=true dirty=%d ahead=%d pid=%d", i, dirty, ahead, cmd.Process.Pid))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after SIGKILL (-want +got):\n%s", diff)
	}
	rep, err := m.Prune(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 0 || len(rep.Kept) != n {
		t.Fatalf("prune: %+v", rep)
	}
	for i, p := range places {
		q, err := m.Place(ctx, Request{AgentID: p.AgentID, Identity: p.Name, Cwd: repo})
		if err != nil {
			t.Fatal(err)
		}
		if q.Path != p.Path || !q.Resumed {
			t.Errorf("agent%d re-entered %+v", i, q)
		}
		if got := read(t, filepath.Join(q.Path, "work-agent"+strconv.Itoa(i)+".txt")); got != "unsaved work of agent"+strconv.Itoa(i)+"\n" {
			t.Errorf("agent%d's work: %q", i, got)
		}
		if i%2 == 1 && read(t, filepath.Join(q.Path, "a.txt")) != "uncommitted edit of agent"+strconv.Itoa(i)+"\n" {
			t.Errorf("agent%d's uncommitted edit is lost", i)
		}
	}
	list, _ = m.List(ctx, repo)
	for _, w := range list {
		if w.State != Live || w.Owner.PID != os.Getpid() {
			t.Errorf("%s after re-entering: %s of %d", w.Name, w.State, w.Owner.PID)
		}
	}
}

// TestChaosKilledDuringCheck: a serve killed with SIGKILL while a merge's
// check runs leaves the lead's checkout as it was (no MERGE_HEAD, no
// changed file, the branch where it was) and the agent's worktree too; the
// check's worktree is removed by the next prune.
func TestChaosKilledDuringCheck(t *testing.T) {
	ctx := context.Background()
	_, repo, p := mergeSetup(t)
	lead, agent := leadState(t, repo), agentState(t, p)
	b, _ := json.Marshal(p)
	pidFile := filepath.Join(tempDir(t), "check.pid")
	cmd, _ := startHelper(t, "merge", "WORKSPACE_TEST_AGENT="+string(b), "WORKSPACE_TEST_PIDFILE="+pidFile)
	kill9(t, cmd)
	// The check runs in its own process group and outlives the killed
	// serve, as it would after a real SIGKILL: stop it.
	pid, err := strconv.Atoi(strings.TrimSpace(readMaybe(pidFile)))
	if err != nil {
		t.Fatalf("the check's pid: %v", err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if got := leadState(t, repo); got != lead {
		t.Errorf("the lead changed:\n%s\n%s", lead, got)
	}
	if got := agentState(t, p); got != agent {
		t.Errorf("the agent changed:\n%s\n%s", agent, got)
	}
	if r := refs(t, repo, "refs/atm/checks/"); len(r) != 1 {
		t.Fatalf("check records: %v", r)
	}
	m := newManager(t, Owner{})
	rep, err := m.Prune(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checks != 1 || refs(t, repo, "refs/atm/checks/") != nil || len(rep.Removed) != 0 {
		t.Errorf("prune: %+v", rep)
	}
	if ents, _ := os.ReadDir(filepath.Join(repo, ChecksDir)); len(ents) != 0 {
		t.Errorf("check worktrees left: %v", ents)
	}
}
