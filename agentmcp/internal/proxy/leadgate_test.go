package proxy

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
)

// claudeGate emulates Claude Code 2.1.332's gate for peer messages as
// read from its code and measured (leadgate.go): per sender (the line's
// from) a bucket of 30 tokens refilled at 0.5 a second, a line equal to
// the sender's last one taken within 30 s refused, and at most 50 lines
// waiting in the queue (drain empties it: the model's next request).
type claudeGate struct {
	mu      sync.Mutex
	senders map[string]*claudeSender
	queued  int
	taken   []ccmsg.Message
	dropped []string // "reason: content"
}

type claudeSender struct {
	tokens   float64
	refilled time.Time
	last     string
	lastAt   time.Time
}

func newClaudeGate() *claudeGate { return &claudeGate{senders: map[string]*claudeSender{}} }

// admit is Claude Code's admission of line at now; it reports the reason
// of a drop, or "".
func (g *claudeGate) admit(line ccmsg.Message, now time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.senders["from:"+line.From]
	if s == nil {
		s = &claudeSender{tokens: gateBurst, refilled: now}
		g.senders["from:"+line.From] = s
	}
	reason := ""
	switch {
	case s.last == line.Content && now.Sub(s.lastAt) < gateDuplicateWindow:
		reason = "duplicate"
	default:
		s.tokens = min(gateBurst, s.tokens+now.Sub(s.refilled).Seconds()/gateRefill.Seconds())
		s.refilled = now
		if s.tokens < 1 {
			reason = "rate-limited"
			break
		}
		if g.queued >= gateQueue {
			reason = "queue-full"
			break
		}
		s.tokens--
		s.last, s.lastAt = line.Content, now
		g.queued++
		g.taken = append(g.taken, line)
	}
	if reason != "" {
		g.dropped = append(g.dropped, reason+": "+line.Content)
	}
	return reason
}

// drain empties the queue, as the model's next request does.
func (g *claudeGate) drain() {
	g.mu.Lock()
	g.queued = 0
	g.mu.Unlock()
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func parts(from string, bodies ...string) []pushPart {
	out := make([]pushPart, len(bodies))
	for i, b := range bodies {
		out[i] = pushPart{key: from, from: from, body: b}
	}
	return out
}

func numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s %d", prefix, i))
	}
	return out
}

// TestGatePace: the lines gate.pace makes of each batch, and their wait,
// with Claude Code's numbers less the reserves (25 tokens a sender, a
// token every 2 s, a queue of 40 lines that lets a line out every 10 s
// while the lead does not wait for serve).
func TestGatePace(t *testing.T) {
	type step struct {
		after time.Duration // the clock moves on by this before the batch
		call  int           // 1: the lead calls a tool of serve's before the batch; -1: serve answers it
		parts []pushPart
		limit time.Duration // 0: a minute
		want  []string      // the lines' contents' bodies
		wait  time.Duration // at - now
		ok    bool
	}
	env := func(from string, body string) string { return ccmsg.Envelope(from, from, body) }
	bodies := func(from string, bs ...string) []string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = env(from, b)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a line each while the tokens last", []step{
			{parts: parts("codex1", numbered("m", 0, 10)...), want: bodies("codex1", numbered("m", 0, 10)...), ok: true},
			{parts: parts("codex1", numbered("m", 10, 20)...), want: bodies("codex1", numbered("m", 10, 20)...), ok: true},
			// 5 tokens left for 10 messages: one line carries them.
			{parts: parts("codex1", numbered("m", 20, 23)...), want: bodies("codex1", numbered("m", 20, 23)...), ok: true},
			{parts: parts("codex1", numbered("m", 23, 26)...),
				want: bodies("codex1", "(1/3) m 23\n\n(2/3) m 24\n\n(3/3) m 25"), ok: true},
		}},
		{"a sender out of tokens waits for one", []step{
			{parts: parts("codex1", numbered("m", 0, 25)...), want: bodies("codex1", numbered("m", 0, 25)...), ok: true},
			{parts: parts("codex1", "m 25"), want: bodies("codex1", "m 25"), wait: 2 * time.Second, ok: true},
			{parts: parts("codex1", "m 26"), want: bodies("codex1", "m 26"), wait: 4 * time.Second, ok: true},
			{after: 3 * time.Second, parts: parts("codex1", "m 27", "m 28"), want: bodies("codex1", "(1/2) m 27\n\n(2/2) m 28"), wait: 3 * time.Second, ok: true},
			{parts: parts("codex1", "m 29"), limit: time.Second, ok: false},
			{parts: parts("codex2", "n 0"), limit: time.Second, want: bodies("codex2", "n 0"), ok: true},
		}},
		{"a repeat within the window is marked", []step{
			{parts: parts("codex1", "done", "done", "done"), want: bodies("codex1", "done", "done"+againMark, "done"), ok: true},
			{after: 5 * time.Second, parts: parts("codex1", "done"), want: bodies("codex1", "done"+againMark), ok: true},
			{parts: parts("codex2", "done"), want: bodies("codex2", "done"), ok: true},
			{after: 41 * time.Second, parts: parts("codex1", "done"), want: bodies("codex1", "done"), ok: true},
			{parts: parts("codex1", "other", "done"), want: bodies("codex1", "other", "done"), ok: true},
		}},
		{"the queue's room merges every sender", []step{
			{parts: parts("a", numbered("a", 0, 20)...), want: bodies("a", numbered("a", 0, 20)...), ok: true},
			{parts: parts("b", numbered("b", 0, 18)...), want: bodies("b", numbered("b", 0, 18)...), ok: true},
			// 2 lines of room, 4 messages of two senders: a line each.
			{parts: append(parts("a", "a 20", "a 21"), parts("c", "c 0", "c 1")...),
				want: append(bodies("a", "(1/2) a 20\n\n(2/2) a 21"), bodies("c", "(1/2) c 0\n\n(2/2) c 1")...), ok: true},
			// No room: the mail waits for a later check.
			{parts: parts("c", "c 2"), ok: false},
			// A line leaves every 10 s while the lead does not wait for serve.
			{after: gateQueueDrain, parts: parts("c", "c 2"), want: bodies("c", "c 2"), ok: true},
			// While it waits for a call of serve's, nothing leaves.
			{call: 1, parts: parts("c", "c 3"), ok: false},
			{after: time.Minute, parts: parts("c", "c 3"), ok: false},
			{call: -1, parts: parts("c", "c 3"), ok: false},
			// A call after the answer: what was pushed before it has left.
			{after: 3 * time.Second, call: 1, parts: append(parts("a", numbered("a", 30, 33)...), parts("b", numbered("b", 30, 34)...)...),
				want: append(bodies("a", numbered("a", 30, 33)...), bodies("b", numbered("b", 30, 34)...)...), ok: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			g := newGate(gateConfig{}, clock.now)
			for i, st := range tc.steps {
				clock.add(st.after)
				switch st.call {
				case 1:
					g.callStarted()
				case -1:
					g.callEnded()
				}
				limit := st.limit
				if limit == 0 {
					limit = time.Minute
				}
				lines, at, ok := g.pace(st.parts, limit)
				if ok != st.ok {
					t.Fatalf("step %d: ok %v, want %v", i, ok, st.ok)
				}
				if !ok {
					continue
				}
				var got []string
				for _, l := range lines {
					got = append(got, l.Content)
				}
				if diff := cmp.Diff(st.want, got); diff != "" {
					t.Errorf("step %d: lines (-want +got):\n%s", i, diff)
				}
				if wait := at.Sub(clock.now()); wait != st.wait {
					t.Errorf("step %d: wait %v, want %v", i, wait, st.wait)
				}
			}
		})
	}
}

// TestGateNeverDropped: batches of random senders, sizes and texts (many
// repeats), at random moments, through gate.pace, then through the
// emulated Claude Code gate at the time pace gave plus a lag of up to a
// second (Claude Code's busy event loop): no line is dropped, and every
// message is in a line taken, each sender's in order. The lead calls serve's tools at
// random (gate.callStarted, callEnded): while it waits for one, Claude
// Code's queue keeps every line; the request that made a call took what
// was queued at some moment after serve's previous answer; otherwise the
// model takes the queue within 80 s of its last request or of serve's
// last answer (queueEstimate assumes a line leaves every 10 s, which with
// its reserve of 10 lines covers 100 s).
func TestGateNeverDropped(t *testing.T) {
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			clock := &fakeClock{t: epoch}
			g := newGate(gateConfig{}, clock.now)
			senders := []string{"codex1", "codex2", "arch", "dev-1"}
			texts := []string{"done", "ok", "tests pass", "see the diff"}
			type event struct {
				at    time.Time
				drain bool
				line  ccmsg.Message
			}
			var events []event
			var want []string
			inCall := false
			lastDrain, answered, lastAdmit := epoch, epoch, epoch
			gap := time.Duration(rng.IntN(80000)) * time.Millisecond
			for range 400 {
				clock.add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				now := clock.now()
				switch r := rng.IntN(20); {
				case !inCall && r == 0:
					// The request that made this call took the queue after
					// serve's last answer.
					from := maxTime(answered, lastDrain)
					lastDrain = from.Add(time.Duration(rng.Int64N(int64(now.Sub(from)) + 1)))
					events = append(events, event{at: lastDrain, drain: true})
					g.callStarted()
					inCall = true
				case inCall && r < 3:
					g.callEnded()
					inCall, answered = false, now
					gap = time.Duration(rng.IntN(80000)) * time.Millisecond
				}
				for !inCall && now.Sub(maxTime(lastDrain, answered)) >= gap {
					lastDrain = maxTime(lastDrain, answered).Add(gap)
					events = append(events, event{at: lastDrain, drain: true})
					gap = time.Duration(rng.IntN(80000)) * time.Millisecond
				}
				var ps []pushPart
				for range 1 + rng.IntN(10) {
					s := senders[rng.IntN(len(senders))]
					text := texts[rng.IntN(len(texts))]
					if rng.IntN(3) == 0 {
						text = fmt.Sprintf("%s #%d", text, len(want))
					}
					ps = append(ps, pushPart{key: s, from: s, body: text})
				}
				lines, at, ok := g.pace(ps, maxPace)
				if !ok {
					continue
				}
				for _, p := range ps {
					want = append(want, p.key+": "+p.body)
				}
				// Claude Code reads a connection's lines in order, up to a
				// second late, and the connections in the order written.
				lastAdmit = maxTime(lastAdmit, at.Add(time.Duration(rng.IntN(1000))*time.Millisecond))
				for _, l := range lines {
					events = append(events, event{at: lastAdmit, line: l})
				}
				clock.t = maxTime(clock.now(), at) // the bridge offers the next batch once this one is written
			}
			slices.SortStableFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
			cc := newClaudeGate()
			for _, e := range events {
				if e.drain {
					cc.drain()
					continue
				}
				if reason := cc.admit(e.line, e.at); reason != "" {
					t.Fatalf("Claude Code dropped a line (%s) at %v: %q", reason, e.at.Sub(epoch), e.line.Content)
				}
			}
			// Every message is in a line taken, each sender's in order.
			var got []string
			for _, l := range cc.taken {
				for _, b := range splitMerged(l.Content) {
					got = append(got, l.From+": "+b)
				}
			}
			bySender := func(a, b string) int { return strings.Compare(a[:strings.Index(a, ":")], b[:strings.Index(b, ":")]) }
			slices.SortStableFunc(want, bySender)
			slices.SortStableFunc(got, bySender)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("messages taken (-sent +taken):\n%s", diff)
			}
		})
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// splitMerged returns the messages' bodies of a line's content: the
// envelope's body without againMark, split at mergeBodies' numbers.
func splitMerged(content string) []string {
	body := content[strings.Index(content, ">\n")+2 : strings.LastIndex(content, "\n</")]
	for strings.HasSuffix(body, againMark) {
		body = strings.TrimSuffix(body, againMark)
	}
	if !strings.HasPrefix(body, "(1/") {
		return []string{body}
	}
	return mergedNumber.Split(body, -1)[1:]
}

// mergedNumber is mergeBodies' "(2/3) " at the start of the body or after
// a blank line.
var mergedNumber = regexp.MustCompile(`(?:^|\n\n)\(\d+/\d+\) `)
