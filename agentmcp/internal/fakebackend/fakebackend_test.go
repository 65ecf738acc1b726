package fakebackend

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
)

// recorder is a turn's Handler and Flusher: it keeps what the turn told
// (an event as its type, or "say: <text>" for a message, "tokens: n";
// "flush") and answers each approval with answer.
type recorder struct {
	mu     sync.Mutex
	told   []string
	asked  []backend.Approval
	answer backend.Decision
}

func (r *recorder) Event(e backend.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case e.Neutral != nil && e.Neutral.Kind == backend.ActivityMessage:
		r.told = append(r.told, "say: "+e.Neutral.Text)
	case e.Neutral != nil && e.Neutral.Usage != nil:
		r.told = append(r.told, "tokens: "+strconv.FormatInt(e.Neutral.Usage.TotalTokens, 10))
	default:
		r.told = append(r.told, e.Type)
	}
}

func (r *recorder) Approval(a *backend.Approval) {
	r.mu.Lock()
	r.asked = append(r.asked, *a)
	d := r.answer
	r.mu.Unlock()
	_ = a.Respond(d)
}

func (r *recorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.told = append(r.told, "flush")
}

// TestScript: each line of a prompt does what the package doc says, told
// in the events a real backend's turn has.
func TestScript(t *testing.T) {
	start := []string{"task_started", "flush"}
	tests := []struct {
		prompt string
		answer backend.Decision
		want   *backend.Result
		err    string
		told   []string
		asked  []string // commands asked
	}{
		{prompt: "context\nhello", want: &backend.Result{ThreadID: "thread-1", Text: "echo: hello", Status: "completed"},
			told: append(start, "task_complete")},
		{prompt: "x\n\n<output-schema>{}</output-schema>", want: &backend.Result{ThreadID: "thread-1", Text: "echo: x", Status: "completed"},
			told: append(start, "task_complete")},
		{prompt: "EVENTS=2", want: &backend.Result{ThreadID: "thread-1", Text: "echo: EVENTS=2", Status: "completed"},
			told: []string{"task_started", "agent_message_content_delta", "agent_message_content_delta", "flush", "task_complete"}},
		{prompt: "SAY one\nSAY two\nend", want: &backend.Result{ThreadID: "thread-1", Text: "echo: end", Status: "completed"},
			told: []string{"task_started", "say: one", "say: two", "flush", "task_complete"}},
		{prompt: "ANSWER={\"n\": 1}\nlast", want: &backend.Result{ThreadID: "thread-1", Text: `{"n": 1}`, Status: "completed"},
			told: append(start, "task_complete")},
		{prompt: "APPROVE", answer: backend.Decision{Kind: backend.Deny, Reason: "no"},
			want: &backend.Result{ThreadID: "thread-1", Text: "decision: deny no", Status: "completed"},
			told: append(start, "task_complete"), asked: []string{"touch x in /w"}},
		{prompt: "ASK 2", answer: backend.Decision{Kind: backend.Approve},
			want: &backend.Result{ThreadID: "thread-1", Text: "decisions: approve; approve", Status: "completed"},
			told: append(start, "task_complete"), asked: []string{"make 1 in /src", "make 2 in /src"}},
		{prompt: "TOKENS 100", want: &backend.Result{ThreadID: "thread-1", Text: "echo: TOKENS 100", Status: "completed"},
			told: append(start, "tokens: 100", "task_complete")},
		{prompt: "FAIL", want: &backend.Result{ThreadID: "thread-1", Text: "model error", IsError: true, Status: "failed"}, told: start},
		{prompt: "FAIL_START", err: "executable file not found"},
		{prompt: "UNREACHABLE", err: "timed out", told: append(start, "stream_error")},
		{prompt: "UNREACHABLE_APP", err: "timed out", told: append(start, "error")},
		{prompt: "DIE", err: "killed"},
		{prompt: "DIE_ACCEPTED", err: "killed"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.prompt, "\n", "|"), func(t *testing.T) {
			leakcheck.Check(t, "fakebackend.")
			f := New(Config{})
			rec := &recorder{answer: tt.answer}
			var hooks []string
			got, err := f.Turn(context.Background(), backend.TurnRequest{Prompt: tt.prompt, Params: backend.ThreadParams{Cwd: "/w"}, Handler: rec,
				OnThread: func(id string) { hooks = append(hooks, "thread "+id) }, OnSent: func() { hooks = append(hooks, "sent") },
				OnAccepted: func() { hooks = append(hooks, "accepted") }})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want one that says %q", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.told, rec.told); diff != "" {
				t.Errorf("told (-want +got):\n%s", diff)
			}
			var asked []string
			for _, a := range rec.asked {
				asked = append(asked, a.Command+" in "+a.Cwd)
			}
			if diff := cmp.Diff(tt.asked, asked); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
			wantHooks := []string{"thread thread-1", "sent", "accepted"}
			switch tt.prompt {
			case "DIE":
				wantHooks = wantHooks[:2]
			case "FAIL_START":
				wantHooks = nil // no thread was made, nothing sent
			}
			if diff := cmp.Diff(wantHooks, hooks); diff != "" {
				t.Errorf("hooks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBlock: a BLOCK turn ends with Answer's text, an interrupt, its
// context's end or its timeout; TOKENS_BLOCK tells its tokens first.
func TestBlock(t *testing.T) {
	leakcheck.Check(t, "fakebackend.")
	f := New(Config{})
	ctx := context.Background()
	run := func(req backend.TurnRequest) chan *backend.Result {
		out := make(chan *backend.Result, 1)
		go func() {
			r, _ := f.Turn(ctx, req)
			out <- r
		}()
		return out
	}
	answered := run(backend.TurnRequest{Prompt: "BLOCK"})
	f.Answer("done")
	if r := <-answered; r.Text != "done" || r.Status != "completed" {
		t.Errorf("answered = %+v", r)
	}
	rec := &recorder{}
	intr := run(backend.TurnRequest{ThreadID: "thread-1", Prompt: "TOKENS_BLOCK 10", Handler: rec})
	waitRunning(t, f, "thread-1")
	if err := f.Interrupt(ctx, "thread-1"); err != nil {
		t.Fatal(err)
	}
	if r := <-intr; r.Status != "interrupted" || !r.IsError {
		t.Errorf("interrupted = %+v", r)
	}
	if !strings.Contains(strings.Join(rec.told, ","), "tokens: 10") {
		t.Errorf("told %v, want the tokens first", rec.told)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r, err := f.Turn(cctx, backend.TurnRequest{Prompt: "BLOCK"}); !errors.Is(err, context.Canceled) || r.Status != "interrupted" {
		t.Errorf("cancelled = %+v, %v", r, err)
	}
	_, err := f.Turn(ctx, backend.TurnRequest{Prompt: "BLOCK", Timeout: time.Millisecond})
	var te *backend.TimeoutError
	if !errors.As(err, &te) || te.Partial != "partial text" {
		t.Errorf("timed out = %v, want a TimeoutError with the partial text", err)
	}
}

// waitRunning waits until a turn runs on thread.
func waitRunning(t *testing.T, f *Backend, thread string) {
	t.Helper()
	poll.Until(t, "a turn on "+thread, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, ok := f.running[thread]
		return ok
	})
}

// TestThreads: each protocol's thread policy, as the turn the fake took
// (Requests) and the thread it ran on.
func TestThreads(t *testing.T) {
	type turnWant struct{ asked, took, ran, prompt, instructions string }
	tests := []struct {
		name     string
		protocol codexchild.Kind
		prepare  func(f *Backend)
		turns    []backend.TurnRequest
		want     []turnWant
	}{
		{"kept", "", nil,
			[]backend.TurnRequest{{Prompt: "a"}, {ThreadID: "thread-1", Prompt: "b", Preamble: "P "}, {ThreadID: "other", Prompt: "c"}},
			[]turnWant{{"", "", "thread-1", "a", ""}, {"thread-1", "thread-1", "thread-1", "b", ""}, {"other", "other", "other", "c", ""}}},
		{"lost", "", func(f *Backend) { f.Lose("old") },
			[]backend.TurnRequest{{ThreadID: "old", Prompt: "a"}, {ThreadID: "old", Prompt: "b", SameThread: true}},
			[]turnWant{{"old", "old", "thread-1", "a", ""}, {"old", "old", "old", "b", ""}}},
		{"mcp-server", codexchild.KindMCPServer, nil,
			[]backend.TurnRequest{{ThreadID: "never", Prompt: "a", Seed: "S", Params: backend.ThreadParams{DeveloperInstructions: "D"}},
				{ThreadID: "thread-1", Prompt: "b", Preamble: "P "}},
			[]turnWant{{"never", "", "thread-1", "a", "S\n\nD"}, {"thread-1", "thread-1", "thread-1", "P b", ""}}},
		{"app-server", codexchild.KindAppServer, nil,
			[]backend.TurnRequest{{ThreadID: "stored", Prompt: "a", Preamble: "P "}},
			[]turnWant{{"stored", "stored", "stored", "P a", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{Protocol: tt.protocol})
			if tt.prepare != nil {
				tt.prepare(f)
			}
			var got []turnWant
			for _, req := range tt.turns {
				r, err := f.Turn(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				took := f.Requests()[len(got)]
				got = append(got, turnWant{req.ThreadID, took.ThreadID, r.ThreadID, took.Prompt, took.Params.DeveloperInstructions})
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(turnWant{})); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPServerAfterInterrupt: on mcp-server a thread whose turn was
// interrupted gives way to a fresh one, every result goes to OnResult
// first, and a thread asked as it is (SameThread) that the fake never ran
// is not found.
func TestMCPServerAfterInterrupt(t *testing.T) {
	leakcheck.Check(t, "fakebackend.")
	f := New(Config{Protocol: codexchild.KindMCPServer})
	ctx := context.Background()
	var answered []string
	onResult := func(r *backend.Result) { answered = append(answered, r.Text) }
	if _, err := f.Turn(ctx, backend.TurnRequest{Prompt: "first", OnResult: onResult}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *backend.Result, 1)
	go func() {
		r, _ := f.Turn(ctx, backend.TurnRequest{ThreadID: "thread-1", Prompt: "BLOCK"})
		done <- r
	}()
	waitRunning(t, f, "thread-1")
	_ = f.Interrupt(ctx, "thread-1")
	<-done
	r, err := f.Turn(ctx, backend.TurnRequest{ThreadID: "thread-1", Prompt: "again", OnResult: onResult})
	if err != nil || r.ThreadID != "thread-2" {
		t.Errorf("after the interrupt: %+v, %v; want a fresh thread-2", r, err)
	}
	r, _ = f.Turn(ctx, backend.TurnRequest{ThreadID: "nowhere", SameThread: true, Prompt: "x", OnResult: onResult})
	if !r.IsError || !strings.Contains(r.Text, "Session not found") {
		t.Errorf("an unknown thread as it is: %+v", r)
	}
	if diff := cmp.Diff([]string{"echo: first", "echo: again", "Session not found for thread_id: nowhere"}, answered); diff != "" {
		t.Errorf("OnResult (-want +got):\n%s", diff)
	}
}

// TestChild: the fake as a supervised child: started by Start after its
// gate, exited (Die) turns fail, Close counts and stops it, Unavailable
// says SetDown's error, a gated prompt waits.
func TestChild(t *testing.T) {
	leakcheck.Check(t, "fakebackend.")
	ctx := context.Background()
	gate := make(chan struct{})
	f := New(Config{Protocol: codexchild.KindAppServer, PID: 7, Unstarted: true, StartGate: gate})
	if st := f.Status(); st.Started || st.Running || st.PID != 0 || st.Protocol != "app-server" {
		t.Errorf("before Start: %+v", st)
	}
	started := make(chan error, 1)
	go func() { started <- f.Start(ctx) }()
	select {
	case <-started:
		t.Fatal("Start returned before its gate opened")
	case <-time.After(10 * time.Millisecond):
	}
	close(gate)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if st := f.Status(); !st.Running || st.PID != 7 {
		t.Errorf("after Start: %+v", st)
	}
	down := errors.New("down")
	f.SetDown(down)
	if err := f.Unavailable(); err != down {
		t.Errorf("Unavailable = %v", err)
	}
	summary := make(chan struct{})
	f.Gate("Summarize", summary)
	held := make(chan error, 1)
	go func() {
		_, err := f.Turn(ctx, backend.TurnRequest{Prompt: "Summarize it"})
		held <- err
	}()
	select {
	case <-held:
		t.Fatal("a gated turn ran before its gate opened")
	case <-time.After(10 * time.Millisecond):
	}
	close(summary)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	f.Die()
	var ee *backend.ExitError
	if _, err := f.Turn(ctx, backend.TurnRequest{Prompt: "x"}); !errors.As(err, &ee) || ee.Status.Signal != "killed" {
		t.Errorf("a turn after Die: %v", err)
	}
	if err := f.Close(ctx); err != nil || f.Closes() != 1 || f.Status().Running {
		t.Errorf("Close: %v, closes %d, %+v", err, f.Closes(), f.Status())
	}
}
