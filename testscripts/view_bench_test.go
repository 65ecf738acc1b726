package testscripts

// Benchmarks of the live view in headless Chromium: how long an agent's
// event takes to reach the page's DOM, with 20 agents producing events;
// and whether the page stays responsive with 50 agents and 10,000 events.
// The serves are stood in for by feeds that speak the feed's wire (one
// JSON frame a line on a Unix socket, the record in the registry instance
// directory), so that what is measured is `atm-agent-mcp view` and the
// page alone.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// benchFeed is a serve's feed as the view reads it: hello, a snapshot,
// then agent and mail frames.
type benchFeed struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	w     []*bufio.Writer
}

// startBenchFeed listens in dir and writes the record of instance into
// teamDir/instance/feed.json.
func startBenchFeed(tb testing.TB, dir, teamDir, team, instance string) *benchFeed {
	sock := filepath.Join(dir, instance+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	f := &benchFeed{ln: ln}
	serve := map[string]any{"instance": instance, "team": team, "pid": os.Getpid(), "started": time.Now()}
	rec, _ := json.Marshal(map[string]any{"socket": sock, "serve": serve})
	if err := os.MkdirAll(filepath.Join(teamDir, instance), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(teamDir, instance, "feed.json"), rec, 0o600); err != nil {
		tb.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w := bufio.NewWriter(c)
			b, _ := json.Marshal(map[string]any{"type": "hello", "serve": serve})
			w.Write(append(b, '\n'))
			b, _ = json.Marshal(map[string]any{"type": "snapshot", "agents": []any{}})
			w.Write(append(b, '\n'))
			w.Flush()
			f.mu.Lock()
			f.conns, f.w = append(f.conns, c), append(f.w, w)
			f.mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
	})
	return f
}

// send writes a frame to every connected view.
func (f *benchFeed) send(frame map[string]any) {
	b, _ := json.Marshal(frame)
	b = append(b, '\n')
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.w {
		w.Write(b)
		w.Flush()
	}
}

func (f *benchFeed) connected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.w)
}

// benchAgent is an agent frame whose current item carries a stamp.
func benchAgent(i int, stamp string, started time.Time) map[string]any {
	return map[string]any{"type": "agent", "agent": map[string]any{
		"agent_id": fmt.Sprintf("codex-bench%02d", i), "identity": fmt.Sprintf("dev-%02d", i), "kind": "codex", "model": "gpt-5",
		"state": "working", "state_since": started, "status": "busy", "turns": 3, "queued": 0, "unread_mail": i % 3,
		"turn_started": started, "item": map[string]any{"type": "command", "summary": stamp, "since": time.Now()},
		"spans": []any{map[string]any{"start": started}},
		"usage": map[string]any{"input_tokens": 1000 * i, "cached_input_tokens": 0, "output_tokens": 100 * i, "total_tokens": 1100 * i},
	}}
}

// viewBin builds the atm-agent-mcp binary once.
var viewBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "atm-view-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "atm-agent-mcp")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/atm-agent-mcp")
	cmd.Dir = filepath.Join("..", "agentmcp")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// benchView starts the view of team "bench" under home with n feeds
// (serves), and a browser on its page with an observer that records, for
// each stamp "t=<ms>" the page shows, how long after that time it did.
func benchView(b *testing.B, serves int) (context.Context, []*benchFeed) {
	if _, err := os.Stat(chromiumBin); err != nil {
		b.Skipf("%s is missing: make chromium installs it", chromiumBin)
	}
	bin, err := viewBin()
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	sockDir, err := os.MkdirTemp("", "vb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(sockDir) })
	teamDir := filepath.Join(home, ".config", "atm", "agent-sessions", "bench")
	var feeds []*benchFeed
	for i := range serves {
		feeds = append(feeds, startBenchFeed(b, sockDir, teamDir, "bench", fmt.Sprintf("lead-%d", i)))
	}
	cmd := exec.Command(bin, "view", "--team", "bench")
	cmd.Env = append(withoutClaudeSession(os.Environ()), "ATM_HOME="+home, "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	url := regexp.MustCompile(`http://\S+`).FindString(line)
	if url == "" {
		b.Fatalf("view printed %q", line)
	}
	ctx, cancel, err := startBrowser(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, f := range feeds {
		for f.connected() == 0 {
			if time.Now().After(deadline) {
				b.Fatal("the view did not connect to the feeds")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Record when each stamp reaches the DOM.
	const observe = `(() => {
		window.__lat = [];
		window.__seen = new Set();
		const rows = document.getElementById("agent-rows");
		new MutationObserver(() => {
			const now = Date.now();
			for (const td of rows.querySelectorAll("td.doing")) {
				const m = /^command: t=(\d+)-(\d+)$/.exec(td.textContent);
				if (m && !window.__seen.has(m[2])) { window.__seen.add(m[2]); window.__lat.push(now - Number(m[1])); }
			}
		}).observe(rows, {childList: true, subtree: true, characterData: true});
		return true;
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](observe)); err != nil {
		b.Fatal(err)
	}
	return ctx, feeds
}

// percentile of sorted values, p in [0, 100].
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// BenchmarkViewEventToDOM: 20 agents, each producing an event every 100 ms
// (200 events a second in all); each event's time from the feed to the
// page's DOM. Reports the p50 and p95 in ms (the bar: p95 under 250 ms)
// and how many events were seen on the page (an agent's events within one
// frame show as its last).
func BenchmarkViewEventToDOM(b *testing.B) {
	ctx, feeds := benchView(b, 1)
	f := feeds[0]
	started := time.Now()
	seq := 0
	b.ResetTimer()
	for b.Loop() {
		for i := range 20 {
			seq++
			f.send(benchAgent(i, fmt.Sprintf("t=%d-%d", time.Now().UnixMilli(), seq), started))
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	time.Sleep(500 * time.Millisecond) // the last events reach the page
	lat, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.__lat`))
	if err != nil {
		b.Fatal(err)
	}
	if len(lat) == 0 {
		b.Fatal("no event reached the page")
	}
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 50), "p50-ms")
	b.ReportMetric(percentile(lat, 95), "p95-ms")
	b.ReportMetric(float64(len(lat))/float64(seq)*100, "%-events-shown")
}

// BenchmarkViewResponsive: 50 agents in 5 serves and 10,000 events (one
// in seven a mail) as fast as the feeds write them; then how long until the
// page shows every agent's last event (drain-ms), how long a click on an
// agent takes to show its page, and a click back the team, measured in the
// page from the click to the frame that shows it (click-p50-ms and
// click-max-ms),
// and how long the page takes to answer a script call (eval-ms).
func BenchmarkViewResponsive(b *testing.B) {
	ctx, feeds := benchView(b, 5)
	started := time.Now()
	seq := 0
	var drain, click, eval []float64
	for b.Loop() {
		t0 := time.Now()
		last := map[int]string{}
		for n := range 10000 {
			i := n % 50
			seq++
			f := feeds[i%5]
			if n%7 == 6 {
				f.send(map[string]any{"type": "mail", "mail": map[string]any{"key": fmt.Sprintf("m%d", seq), "from": fmt.Sprintf("dev-%02d", i),
					"to": "team-lead", "at": time.Now(), "summary": fmt.Sprintf("note %d", seq), "text": "x"}})
				continue
			}
			stamp := fmt.Sprintf("t=%d-%d", time.Now().UnixMilli(), seq)
			last[i] = stamp
			f.send(benchAgent(i, stamp, started))
		}
		want := make([]string, 0, len(last))
		for _, s := range last {
			want = append(want, "command: "+s)
		}
		js := fmt.Sprintf(`(() => { const want = new Set(%s); let n = 0;
			for (const td of document.querySelectorAll("td.doing")) if (want.has(td.textContent)) n++;
			return n === want.size; })()`, mustJSON(want))
		deadline := time.Now().Add(60 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
			if err != nil {
				b.Fatal(err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the page did not show every agent's last event within 60 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		drain = append(drain, float64(time.Since(t0).Milliseconds()))

		// A click on an agent, then on "back": each measured in the page,
		// from the click to the frame that shows the result.
		for _, sel := range []string{`tr[data-identity="dev-07"] td a`, `#back`} {
			ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`new Promise(done => {
				const t = performance.now();
				document.querySelector(%s).click();
				requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)));
			})`, strconv.Quote(sel)), chromedp.EvalAwaitPromise))
			if err != nil {
				b.Fatal(err)
			}
			click = append(click, ms)
		}
		waitJS(b, ctx, `!document.getElementById("main").hidden && document.querySelectorAll("#agent-rows tr").length === 50`)

		t2 := time.Now()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.body.offsetHeight`)); err != nil {
			b.Fatal(err)
		}
		eval = append(eval, float64(time.Since(t2).Microseconds())/1000)
	}
	b.ReportMetric(slices.Max(drain), "drain-ms")
	slices.Sort(click)
	b.ReportMetric(percentile(click, 50), "click-p50-ms")
	b.ReportMetric(slices.Max(click), "click-max-ms")
	b.ReportMetric(slices.Max(eval), "eval-ms")
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#agent-rows tr").length`))
	if err != nil || rows != 50 {
		b.Fatalf("%d rows (%v), want 50", rows, err)
	}
	mails, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#mail li").length`))
	if err != nil || mails != 200 {
		b.Fatalf("%d mail items shown (%v), want the last 200", mails, err)
	}
}

func waitJS(b *testing.B, ctx context.Context, cond string) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + " main.hidden=" + document.getElementById("main").hidden + " rows=" + [...document.querySelectorAll("#agent-rows tr")].map(r => r.dataset.identity + "@" + r.dataset.key).join(",") + " serves=" + document.getElementById("serves").textContent`))
			b.Fatalf("not within 10 s: %s (%s)", cond, state)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}
