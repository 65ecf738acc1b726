package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/google/go-cmp/cmp"
)

// runAsync runs a turn on s on a goroutine of its own; the channel gets its
// result text or error.
func runAsync(s *Session, t Turn) chan string {
	ch := make(chan string, 1)
	go func() {
		r, err := s.Run(context.Background(), t)
		if err != nil {
			ch <- "error: " + err.Error()
			return
		}
		ch <- r.Text
	}()
	return ch
}

func TestRunQueuesInOrderAndReleasesQueuedCalls(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	first := runAsync(s, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "the first turn to run", func() bool { return s.Detail(0).Busy })
	calls := []*fakeCall{{}, {}}
	a := runAsync(s, Turn{Prompt: "a", Source: SourceClaude, Call: calls[0]})
	poll.Until(t, "a to be queued", func() bool { return s.Detail(0).Queued == 1 })
	b := runAsync(s, Turn{Prompt: "b", Source: SourceClaude, Call: calls[1]})
	poll.Until(t, "b to be queued", func() bool { return s.Detail(0).Queued == 2 })
	for i, c := range calls {
		c.mu.Lock()
		if c.releases == 0 {
			t.Errorf("queued call %d was not released before it waited", i)
		}
		c.mu.Unlock()
	}
	h.fb.Answer("first done")
	got := []string{<-first, <-a, <-b}
	want := []string{"first done", "echo: a", "echo: b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var prompts []string
	for _, r := range h.fb.Requests() {
		prompts = append(prompts, r.Prompt[strings.LastIndex(r.Prompt, "\n")+1:])
	}
	if diff := cmp.Diff([]string{"BLOCK", "a", "b"}, prompts); diff != "" {
		t.Errorf("turns reached the backend (-want +got):\n%s", diff)
	}
	if got := s.Detail(0).Status; got != "idle" {
		t.Errorf("status after the turns = %q, want idle", got)
	}
}

func TestQueuePutsClaudeBeforeMail(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	first := runAsync(s, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "the first turn to run", func() bool { return s.Detail(0).Busy })
	var order []string
	done := make(chan struct{}, 3)
	queue := func(name string, src Source) {
		j := &job{source: src}
		j.run = func(context.Context, *job) (*TurnResult, error) { order = append(order, name); return nil, nil }
		j.done = func(*TurnResult, error) { done <- struct{}{} }
		j.discard = func(error) { done <- struct{}{} }
		if _, err := s.submit(j, false); err != nil {
			t.Fatal(err)
		}
	}
	queue("mail-1", SourceMail)
	queue("claude-1", SourceClaude)
	queue("claude-2", SourceClaude)
	h.fb.Answer("ok")
	<-first
	for range 3 {
		<-done
	}
	if diff := cmp.Diff([]string{"claude-1", "claude-2", "mail-1"}, order); diff != "" {
		t.Errorf("run order (-want +got):\n%s", diff)
	}
}

func TestTryMailOnlyWhenIdle(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	first := runAsync(s, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "the first turn to run", func() bool { return s.Detail(0).Busy })
	if s.TryMail("mail while busy", func(bool) { t.Error("report called for a refused delivery") }) {
		t.Error("TryMail on a busy session = true, want false")
	}
	h.fb.Answer("ok")
	<-first
	sent := make(chan bool, 1)
	if !s.TryMail("<team-mail>hi</team-mail>", func(ok bool) { sent <- ok }) {
		t.Fatal("TryMail on an idle session = false, want true")
	}
	if !<-sent {
		t.Error("report(false), want report(true) once the turn was sent")
	}
	poll.Until(t, "the mail turn to end", func() bool { return s.Detail(0).Status == "idle" && s.Detail(0).Turns == 2 })
}

func TestApprovalsFirstAnswerWins(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ApprovalFallback = "queue" })
	s := h.create("arch")
	res := runAsync(s, Turn{Prompt: "APPROVE", Source: SourceClaude})
	poll.Until(t, "the approval to be pending", func() bool { return s.Detail(0).Status == "awaiting_approval" })
	d := s.Detail(0)
	if len(d.PendingApprovals) != 1 || d.PendingApprovals[0].Command != "touch x" || d.PendingApprovals[0].Question != "[arch] Allow Codex to run `touch x` in `"+h.dir+"`?" {
		t.Fatalf("pending approvals = %+v", d.PendingApprovals)
	}
	id, err := s.Respond("", backend.Decision{Kind: backend.Approve})
	if err != nil || id != "approval-1" {
		t.Fatalf("Respond = %q, %v", id, err)
	}
	if got, want := <-res, "decision: approve "; got != want {
		t.Errorf("turn result = %q, want %q", got, want)
	}
	if _, err := s.Respond("approval-1", backend.Decision{Kind: backend.Deny}); !errors.Is(err, proxyerr.ErrInvalidParams) {
		t.Errorf("second Respond: %v, want INVALID_PARAMS", err)
	}
}

func TestApprovalDecisions(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no client, fallback deny", nil, "decision: deny denied automatically"},
		{"no client, fallback approve", func(c *Config) { c.ApprovalFallback = "approve" }, "decision: approve "},
		{"client answers", func(c *Config) {
			c.Asker = &fakeAsker{answer: Answer{backend.Decision{Kind: backend.ApproveForSession}, "ok"}}
		},
			"decision: approve_for_session "},
		{"client cannot be reached", func(c *Config) { c.Asker = &fakeAsker{err: errors.New("client gone")} },
			"decision: deny the approval could not be asked: client gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.modify)
			s := h.create("arch")
			got := <-runAsync(s, Turn{Prompt: "APPROVE", Source: SourceClaude})
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("turn result = %q, want it to start with %q", got, tt.want)
			}
		})
	}
}

// TestApprovalTimeout: an approval nobody answers is denied when the
// elicitation timeout passes, not before, saying after how long; the
// asker's question ends with it. Time is the point here, so it runs on
// testing/synctest's clock: the default five minutes pass at once.
func TestApprovalTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asker := &fakeAsker{block: true}
		h := newHarness(t, func(c *Config) { c.Asker = asker; c.ElicitationTimeout = 5 * time.Minute })
		s := h.create("arch")
		start := time.Now()
		res := runAsync(s, Turn{Prompt: "APPROVE", Source: SourceClaude})
		time.Sleep(5*time.Minute - time.Second)
		synctest.Wait()
		if st := s.Detail(0).Status; st != "awaiting_approval" {
			t.Errorf("a second before the timeout the session is %q, want awaiting_approval", st)
		}
		got := <-res
		if want := "decision: deny no answer from the user within 5m0s"; !strings.HasPrefix(got, want) {
			t.Errorf("turn result = %q, want it to start with %q", got, want)
		}
		if d := time.Since(start); d != 5*time.Minute {
			t.Errorf("denied after %v, want exactly the timeout (5m0s)", d)
		}
		synctest.Wait()
		if n := asker.ended.Load(); n != 1 {
			t.Errorf("%d questions ended, want the one asked", n)
		}
	})
}

// fakeAsker answers every question the same way, or blocks until ctx ends
// (counting the questions so ended).
type fakeAsker struct {
	answer Answer
	err    error
	block  bool
	ended  atomic.Int64
}

func (a *fakeAsker) CanAsk() bool { return true }
func (a *fakeAsker) Ask(ctx context.Context, q Question) (Answer, error) {
	if a.block {
		<-ctx.Done()
		a.ended.Add(1)
		return Answer{}, ctx.Err()
	}
	return a.answer, a.err
}

func TestCloseDeniesPendingApprovals(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ApprovalFallback = "queue" })
	s := h.create("arch")
	res := runAsync(s, Turn{Prompt: "APPROVE", Source: SourceClaude})
	poll.Until(t, "the approval to be pending", func() bool { return s.Detail(0).Status == "awaiting_approval" })
	h.m.Close(context.Background(), s, false)
	if got, want := <-res, "decision: deny the session is being closed"; got != want {
		t.Errorf("turn result = %q, want %q", got, want)
	}
}

func TestCreateHoldsNoLockWhileTheRegistryWrites(t *testing.T) {
	h := newHarness(t, nil)
	other := h.create("dev-1")
	hold, adding := make(chan struct{}), make(chan struct{})
	h.reg.mu.Lock()
	h.reg.hold, h.reg.adding = hold, adding
	h.reg.mu.Unlock()
	created := make(chan error, 1)
	go func() {
		_, err := h.m.Create(context.Background(), CreateRequest{Identity: "arch", Cwd: h.dir})
		created <- err
	}()
	<-adding // the registry write is in progress, and stays so
	lookups := make(chan struct{})
	go func() {
		defer close(lookups)
		h.m.Get(other.Record().AgentID)
		h.m.ByIdentity("dev-1")
		h.m.ByThread("none")
		h.m.Sessions()
	}()
	select {
	case <-lookups:
	case <-time.After(10 * time.Second):
		t.Fatal("lookups blocked while a Create wrote the registry")
	}
	if _, err := h.m.Create(context.Background(), CreateRequest{Identity: "arch", Cwd: h.dir}); !errors.Is(err, proxyerr.ErrIdentityConflict) {
		t.Errorf("a second Create of a reserved identity: %v, want IDENTITY_CONFLICT", err)
	}
	h.reg.mu.Lock()
	h.reg.hold = nil
	h.reg.mu.Unlock()
	close(hold)
	if err := <-created; err != nil {
		t.Fatalf("Create: %v", err)
	}
	if h.m.ByIdentity("arch") == nil {
		t.Error("the identity is not held after Create")
	}
}

// TestPersisterDebounce: writes queued within the debounce window cost one
// registry write, made when the window ends and not before; a write that
// must not wait (soon: a new thread's id) is made at once, one a caller
// waits for (now) before it returns, and close flushes what is queued.
// Time is the point, so it runs on testing/synctest's clock.
func TestPersisterDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		s := h.create("arch")
		synctest.Wait()
		before := h.reg.count()
		p := newPersister(h.reg, h.m.log)
		writes := func() int { synctest.Wait(); return h.reg.count() - before }
		for range 5 {
			p.async(s)
		}
		time.Sleep(persistDebounce - time.Millisecond)
		if n := writes(); n != 0 {
			t.Errorf("%d writes before the debounce window ended, want none", n)
		}
		time.Sleep(time.Millisecond)
		if n := writes(); n != 1 {
			t.Errorf("%d writes for 5 queued within the window, want 1", n)
		}
		p.soon(s)
		if n := writes(); n != 2 {
			t.Errorf("%d writes after soon, want 2 (at once, no debounce)", n)
		}
		p.now(s)
		if n := h.reg.count() - before; n != 3 {
			t.Errorf("%d writes when now returned, want 3", n)
		}
		p.async(s)
		p.close()
		if n := h.reg.count() - before; n != 4 {
			t.Errorf("%d writes after close, want 4 (the queued one flushed)", n)
		}
	})
}

func TestReplyFromReaderRecordsTheTurnFirst(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	if r, err := s.Run(context.Background(), Turn{Prompt: "start", Source: SourceClaude}); err != nil || r.ThreadID == "" {
		t.Fatalf("first turn: %+v, %v", r, err)
	}
	h.fb.AnswerFromReader(true)
	call := &fakeCall{replyNow: true, detailFor: s}
	_, err := s.Run(context.Background(), Turn{Prompt: "again", Source: SourceClaude, Call: call})
	if !errors.Is(err, ErrAnswered) {
		t.Fatalf("Run: %v, want ErrAnswered", err)
	}
	if call.replied == nil || call.replied.Text != "echo: again" {
		t.Fatalf("reply = %+v, want echo: again", call.replied)
	}
	if call.atCommit != "idle" {
		t.Errorf("status when the reply was committed = %q, want idle", call.atCommit)
	}
	if d := s.Detail(0); d.Turns != 2 || d.LastResult == nil || *d.LastResult.Content != "echo: again" {
		t.Errorf("after the answer from the Codex reader: turns %d, last result %+v", d.Turns, d.LastResult)
	}
}

func TestTurnContext(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ExtraInstructions = "Be brief." })
	s := h.create("arch")
	for _, p := range []string{"one", "two"} {
		if _, err := s.Run(context.Background(), Turn{Prompt: p, Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := h.fb.Requests()
	first, second := reqs[0], reqs[1]
	if first.ThreadID != "" || second.ThreadID != "thread-1" {
		t.Errorf("thread ids = %q, %q; want a new thread, then thread-1", first.ThreadID, second.ThreadID)
	}
	for _, want := range []string{"<session-context>", "Identity:  arch", "Team:      dev", "<team-communication>", "<multi-agent>\nBe brief."} {
		if !strings.Contains(second.Params.DeveloperInstructions, want) {
			t.Errorf("developer instructions lack %q:\n%s", want, second.Params.DeveloperInstructions)
		}
	}
	if !strings.HasPrefix(second.Preamble, "<session-context>\n") || !strings.HasSuffix(second.Preamble, "</session-context>\n\n") {
		t.Errorf("preamble = %q", second.Preamble)
	}
	if first.Prompt != "one" || second.Prompt != "two" {
		t.Errorf("prompts = %q, %q", first.Prompt, second.Prompt)
	}
}

// TestDetailFitsTheResultCap: agent_status's detail (what Claude Code shows
// the model, whole) stays within max_result_chars however long the result
// and the activity (the latest agent message long too: clipped once, then
// the result's page shrinks), and paging on with offset + len(result_text)
// reads the whole result.
func TestDetailFitsTheResultCap(t *testing.T) {
	const limit = 3000
	h := newHarness(t, func(c *Config) { c.MaxResultChars = limit })
	s := h.create("arch")
	ctx := context.Background()
	for i := range 8 {
		if _, err := s.Run(ctx, Turn{Prompt: "SAY " + strings.Repeat("m", 1800) + fmt.Sprint(i), Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("0123456789", 1000) + "THE-END"
	go func() { h.fb.Answer(long) }()
	if _, err := s.Run(ctx, Turn{Prompt: "BLOCK", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for offset, pages := 0, 0; ; pages++ {
		d := s.Detail(offset)
		if n := jsonLen(d); n > limit {
			t.Fatalf("Detail(%d) is %d characters of JSON, over the cap %d", offset, n, limit)
		}
		if offset == 0 && (len(d.AgentMessages) == 0 || d.LastResult == nil || d.LastResult.Content == nil) {
			t.Errorf("the latest activity was dropped: %+v", d)
		}
		if d.ResultText == nil || pages > 100 {
			t.Fatalf("page at %d: no result_text (after %d pages)", offset, pages)
		}
		got.WriteString(*d.ResultText)
		offset += len([]rune(*d.ResultText))
		if !*d.ResultMore {
			break
		}
	}
	if got.String() != long {
		t.Errorf("the pages read %d characters ending %q, want the whole %d", got.Len(), got.String()[max(0, got.Len()-20):], len(long))
	}
}

// TestTimeoutSaysWhy: a turn that timed out while Codex could not reach
// its model says so in the error, and agent_status shows Codex's last
// notice, on either protocol's event shape.
func TestTimeoutSaysWhy(t *testing.T) {
	for _, tt := range []struct{ prompt, want string }{
		{"UNREACHABLE", "Reconnecting... 2/5 (stream disconnected before completion)"},
		{"UNREACHABLE_APP", "stream disconnected before completion"},
	} {
		h := newHarness(t, nil)
		s := h.create("arch")
		_, err := s.Run(context.Background(), Turn{Prompt: tt.prompt, Source: SourceClaude})
		var pe *proxyerr.Error
		if !errors.As(err, &pe) || pe.Kind != proxyerr.ErrRequestTimeout {
			t.Fatalf("%s: %v, want a timeout", tt.prompt, err)
		}
		if !strings.HasSuffix(pe.Msg, "; Codex's last notice: "+tt.want) || pe.Data["codex_last_error"] != tt.want || pe.Data["codex_retrying"] != true {
			t.Errorf("%s: error %q data %v", tt.prompt, pe.Msg, pe.Data)
		}
		if p := s.Detail(0).CodexProblem; p == nil || p.Message != tt.want || !p.Retrying {
			t.Errorf("%s: agent_status codex_problem %+v", tt.prompt, p)
		}
	}
}
