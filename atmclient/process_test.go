package atmclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The cross-process tests re-execute this test binary in a role chosen by
// roleEnv: "writer" (locked Sends), "claude" (Claude Code's inbox writer
// and reader, emulated in claude_test.go) and "crasher" (Sends until
// killed).
const roleEnv = "ATMCLIENT_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role); err != nil {
			fmt.Fprintln(os.Stderr, role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runRole(role string) error {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch role {
	case "writer", "crasher":
		// Eight back-to-back writers on a loaded machine wait far longer
		// than a real sender; the test is about what gets written, so the
		// writers wait as long as it takes.
		c, err := New(Config{LockTimeout: time.Minute, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return err
		}
		if role == "crasher" {
			// Give kills a chance to land between the journal and the
			// exchange.
			testHook = func(step string) {
				if step == "journaled" {
					time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
				}
			}
		}
		id := os.Getenv("WRITER_ID")
		n, _ := strconv.Atoi(os.Getenv("WRITER_COUNT"))
		for i := 0; n == 0 || i < n; i++ {
			m, err := c.Send(context.Background(), SendRequest{From: "w" + id, Team: "dev", To: "inbox", Text: fmt.Sprintf("w%s-%d", id, i)})
			if err != nil {
				return err
			}
			// The message is committed: report it (the crasher at once).
			fmt.Fprintf(out, "%s %s\n", m.MessageID, m.Text)
			if role == "crasher" {
				out.Flush()
			}
		}
		return nil
	case "claude":
		return runClaude(out)
	}
	return fmt.Errorf("unknown role %q", role)
}

// runClaude plays Claude Code on the inbox $INBOX: its SendMessage
// appends a message every 30 to 60 ms and its reader polls every 20 ms,
// delivering unread entries and consuming them (claude_test.go). It
// reports "sent <text>", "gaveup <text>" (SendMessage failed: the lock
// stayed busy through its retries; nothing was written) and "delivered
// <text>". When stdin closes it stops sending and polls until no unread
// entry is left.
func runClaude(out io.Writer) error {
	path := os.Getenv("INBOX")
	ctx := context.Background()
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	var mu sync.Mutex
	report := func(kind, text string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%s %s\n", kind, text)
	}
	sendErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				sendErr <- nil
				return
			case <-time.After(time.Duration(30+rand.IntN(31)) * time.Millisecond):
			}
			text := fmt.Sprintf("c-%d", i)
			switch err := claudeSend(ctx, path, "claude", text); {
			case errors.Is(err, errClaudeLocked):
				report("gaveup", text)
			case err != nil:
				sendErr <- err
				return
			default:
				report("sent", text)
			}
		}
	}()
	r := &claudeReader{path: path, work: 3 * time.Millisecond}
	stopping := false
	for {
		delivered, err := r.poll(ctx)
		if err != nil {
			return err
		}
		for _, text := range delivered {
			report("delivered", text)
		}
		if !stopping {
			select {
			case <-done:
				if err := <-sendErr; err != nil {
					return err
				}
				stopping = true
			default:
			}
		}
		if stopping && len(delivered) == 0 && len(r.pending) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// child is a re-executed test binary; startChild fails the test if it is
// still running when the test ends.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	first  chan string   // the first output line, if any
	done   chan []string // every output line, at EOF
	waited bool
}

func startChild(t *testing.T, role string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{roleEnv + "=" + role}, env...)...)
	cmd.Stderr = &testWriter{t: t, prefix: role + ": "}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := &child{cmd: cmd, stdin: stdin, first: make(chan string, 1), done: make(chan []string, 1)}
	go func() {
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if lines = append(lines, sc.Text()); len(lines) == 1 {
				ch.first <- sc.Text()
			}
		}
		close(ch.first)
		ch.done <- lines
	}()
	t.Cleanup(func() {
		if !ch.waited {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				return // killed after a failure, not leaked
			}
			t.Errorf("child %s (pid %d) leaked: still running at the end of the test", role, cmd.Process.Pid)
		}
	})
	return ch
}

// wait collects the child's output lines and waits for it to exit.
func (ch *child) wait() ([]string, error) {
	lines := <-ch.done
	ch.waited = true
	return lines, ch.cmd.Wait()
}

type testWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(w.prefix + strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestConcurrentProcesses: 8 writer processes × 500 locked Sends into one
// inbox while a Claude Code process (emulated, claude_test.go) appends its
// own messages with its SendMessage and consumes the inbox with its reader.
// Every message, ours and Claude Code's, is accounted for: delivered by the
// reader exactly once, or still in the file (not delivered); nothing is
// lost, nothing is delivered twice.
//
// Under the race detector (make test) it runs 8 × 100 Sends: every process
// is several times slower there, while the race detector cannot see across
// processes anyway. make test also runs the full size without it.
func TestConcurrentProcesses(t *testing.T) {
	writers, perWriter := 8, 500
	if raceDetector {
		perWriter = 100
	}
	if n, _ := strconv.Atoi(os.Getenv("ATMCLIENT_PER_WRITER")); n > 0 {
		perWriter = n
	}
	c, home := newTestHome(t, "inbox")
	path := inboxPath(t, c, "dev", "inbox")
	env := []string{"ATM_HOME=" + home, "INBOX=" + path}
	cc := startChild(t, "claude", env...)
	var ws []*child
	for i := range writers {
		ws = append(ws, startChild(t, "writer", append(env, fmt.Sprintf("WRITER_ID=%d", i), fmt.Sprintf("WRITER_COUNT=%d", perWriter))...))
	}
	var ours []string
	for _, w := range ws {
		lines, err := w.wait()
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
		for _, l := range lines {
			ours = append(ours, strings.Fields(l)[1])
		}
	}
	cc.stdin.Close()
	ccLines, err := cc.wait()
	if err != nil {
		t.Fatalf("claude: %v", err)
	}
	if len(ours) != writers*perWriter {
		t.Fatalf("writers acknowledged %d messages, want %d", len(ours), writers*perWriter)
	}
	var theirs []string
	delivered := map[string]int{}
	gaveUp := 0
	for _, l := range ccLines {
		kind, text, _ := strings.Cut(l, " ")
		switch kind {
		case "sent":
			theirs = append(theirs, text)
		case "gaveup":
			gaveUp++
		case "delivered":
			delivered[text]++
		}
	}
	entries, err := parseEntries(mustRead(t, path), nil)
	if err != nil {
		t.Fatalf("final inbox does not parse: %v", err)
	}
	inFile := map[string]int{}
	for i, e := range entries {
		if e.err != nil {
			t.Fatalf("final inbox element %d: %v", i, e.err)
		}
		inFile[e.msg.Text]++
	}
	lost := 0
	for _, text := range slices.Concat(ours, theirs) {
		d, f := delivered[text], inFile[text]
		if d+f != 1 {
			lost++
			t.Errorf("message %s delivered %d times and %d times in the file, want once in all", text, d, f)
		}
	}
	if n := len(ours) + len(theirs); len(delivered)+len(entries) != n {
		t.Errorf("%d messages delivered or in the file, want the %d sent", len(delivered)+len(entries), n)
	}
	t.Logf("%d locked messages, %d Claude Code messages (%d SendMessage calls gave up on the busy lock); %d delivered, %d left in the file, %d lost or duplicated",
		len(ours), len(theirs), gaveUp, len(delivered), len(entries), lost)
	if len(theirs) == 0 {
		t.Error("Claude Code never sent")
	}
}

// TestCrashSafety kills a writer with SIGKILL at random moments: the inbox
// always parses and holds every message acknowledged before a kill, once.
// A kill between the journal and the exchange leaves a message journaled
// but not in the inbox; the next writer delivers it, once. A kill inside
// the write also leaves Claude Code's lock directory behind; the test ages
// it past staleness (as the 10 s would) and the next writer takes it over.
//
// Under the race detector (make test) it runs 50 trials: each starts a
// process, which is slow there, and the race detector cannot see across
// processes. make test also runs the 200 without it.
func TestCrashSafety(t *testing.T) {
	trials := 200
	if raceDetector {
		trials = 50
	}
	if testing.Short() {
		trials = 20
	}
	c, home := newTestHome(t, "inbox")
	path := inboxPath(t, c, "dev", "inbox")
	acked := map[string]bool{}
	var unfinished []string // journaled by a killed writer, not yet in the inbox
	killedMidWrite, killedJournaled, staleLocks := 0, 0, 0
	check := func(trial int) {
		res, err := c.Read(bg, "dev", "inbox", ReadOptions{All: true})
		if err != nil || len(res.Problems) > 0 {
			t.Fatalf("trial %d: inbox does not parse after a kill: %v %v", trial, err, res.Problems)
		}
		seen := map[string]int{}
		for _, m := range res.Messages {
			if seen[m.MessageID]++; seen[m.MessageID] > 1 {
				t.Fatalf("trial %d: message %s present twice", trial, m.MessageID)
			}
		}
		for id := range acked {
			if seen[id] != 1 {
				t.Fatalf("trial %d: acknowledged message %s present %d times", trial, id, seen[id])
			}
		}
		// What the last killed writer left unfinished was finished by
		// this trial's writes.
		for _, id := range unfinished {
			if seen[id] != 1 {
				t.Errorf("trial %d: message %s journaled by a killed writer present %d times after the next writes", trial, id, seen[id])
			}
		}
		unfinished = nil
		tmp, err := os.ReadFile(tmpPath(path))
		if err != nil {
			return
		}
		var rec journalRecord
		if json.Unmarshal(mustRead(t, journalPath(path)), &rec) != nil || rec.File != fileHash(tmp) {
			return
		}
		for _, raw := range rec.Messages {
			var m Message
			jsonUnmarshal(t, raw, &m)
			if seen[m.MessageID] == 0 {
				unfinished = append(unfinished, m.MessageID)
			}
		}
		if len(unfinished) > 0 {
			killedJournaled++
		}
	}
	for trial := range trials {
		ch := startChild(t, "crasher", "ATM_HOME="+home, fmt.Sprintf("WRITER_ID=%d", trial))
		// Let it write at least once, then kill it at a random moment.
		_, ok := <-ch.first
		if !ok {
			lines, err := ch.wait()
			t.Fatalf("crasher exited early: %v %v", lines, err)
		}
		time.Sleep(time.Duration(rand.IntN(8000)) * time.Microsecond)
		ch.cmd.Process.Signal(syscall.SIGKILL)
		lines, err := ch.wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("crasher did not die of SIGKILL: %v", err)
		}
		for _, l := range lines {
			acked[strings.Fields(l)[0]] = true
		}
		if _, err := os.Stat(tmpPath(path)); err == nil {
			killedMidWrite++
		}
		if _, err := os.Stat(path + ".lock"); err == nil {
			staleLocks++
			old := time.Now().Add(-11 * time.Second)
			os.Chtimes(path+".lock", old, old)
		}
		check(trial)
	}
	if _, err := c.Repair(bg, "dev", "inbox"); err != nil {
		t.Fatal(err)
	}
	check(trials)
	t.Logf("%d kills, %d acknowledged messages, %d kills left a tmp file behind, %d a lock directory, %d a message journaled but not in the inbox",
		trials, len(acked), killedMidWrite, staleLocks, killedJournaled)
	if killedJournaled == 0 && !testing.Short() {
		t.Error("no kill landed between the journal and the exchange")
	}
}
