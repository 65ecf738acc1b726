package registry

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// crashTrials is the number of SIGKILLs TestCrashSafety delivers.
const crashTrials = 200

// TestCrashSafety kills a process that persists the registry in a loop at
// random moments. After every kill the file must parse and hold the last
// state the child acknowledged, or the one it was writing when it died
// (persisted but not yet acknowledged), never a torn or older one. Each
// trial reopens the registry the previous one left behind, so recovery
// after a crash (pending files, lock release) is exercised too.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns hundreds of processes")
	}
	home := testHome(t)
	// Seed the registry: 100 closed filler sessions and the counter.
	r, err := Open(Config{Team: crashTeam, Identity: crashInstance})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := r.Add(fillerSession(i, StatusClosed)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Add(Session{AgentID: counterID, Identity: "counter", Status: StatusClosed, Tag: "0"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	path := r.Path()

	seed := uint64(time.Now().UnixNano())
	t.Logf("kill timing seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	last := 0 // last state known to be on disk
	pendingSeen := 0
	for trial := range crashTrials {
		c := startChild(t, "persist-loop", "ATM_HOME="+home)
		acked := last
		if trial%10 == 0 {
			// Kill at any moment of the child's life, even during Open.
			time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		} else {
			if l := c.expectPrefix("ready "); l != fmt.Sprintf("ready %d", last) {
				t.Fatalf("trial %d: child loaded %q, want state %d", trial, l, last)
			}
			time.Sleep(time.Duration(rng.IntN(15_000)) * time.Microsecond)
		}
		for _, l := range c.kill() {
			if n, ok := strings.CutPrefix(l, "ack "); ok {
				acked, _ = strconv.Atoi(n)
			}
		}
		got := readCounter(t, path)
		if got != acked && got != acked+1 {
			t.Fatalf("trial %d: registry holds counter %d after the child acknowledged %d", trial, got, acked)
		}
		last = got
		if pending, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".registry.json.*.tmp")); len(pending) > 0 {
			pendingSeen++
		}
	}
	t.Logf("%d kills, final counter %d, %d left a pending file behind", crashTrials, last, pendingSeen)

	// The next Open cleans up after the crash.
	r2, err := Open(Config{Team: crashTeam, Identity: crashInstance})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if pending, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".registry.json.*.tmp")); len(pending) > 0 {
		t.Errorf("pending files left after Open: %v", pending)
	}
	if got := len(r2.List(Filter{})); got != 101 {
		t.Errorf("registry holds %d sessions after the kills, want 101", got)
	}
}

// readCounter parses the crash registry and checks it is a consistent
// state: 100 fillers and a counter whose payload matches its value.
func readCounter(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeFile(data)
	if err != nil {
		t.Fatalf("registry does not parse after a kill: %v\n%s", err, data)
	}
	if len(st.sessions) != 101 {
		t.Fatalf("registry holds %d sessions, want 101", len(st.sessions))
	}
	c := st.sessions[100]
	n, err := strconv.Atoi(c.Tag)
	if err != nil || c.AgentID != counterID {
		t.Fatalf("last session is %s with tag %q, want the counter", c.AgentID, c.Tag)
	}
	if n > 0 {
		if diff := cmp.Diff(string(crashPayload(n)), string(c.Extra["payload"])); diff != "" {
			t.Fatalf("counter %d has the wrong payload (-want +got):\n%s", n, diff)
		}
	}
	return n
}

// fillerSession is a realistic registry entry.
func fillerSession(i int, st Status) Session {
	return Session{
		AgentID:     fmt.Sprintf("codex-filler-%05d", i),
		BackendID:   fmt.Sprintf("019a%012d-thread", i),
		Identity:    fmt.Sprintf("worker-%d", i),
		RepoRoot:    "/home/dev/projects/myapp",
		RepoName:    "myapp",
		Branch:      "feature/auth-refresh",
		Cwd:         "/home/dev/projects/myapp/src",
		Status:      st,
		ThreadState: ThreadClosed,
		Tag:         "feature/auth-refresh",
		Role:        "reviewer",
		AgentSource: ".claude/agents/reviewer.md",
	}
}
