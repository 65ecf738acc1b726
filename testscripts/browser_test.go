package testscripts

// The live view in a real browser: headless Chromium from Debian's
// packages (make chromium installs it), driven from Go with
// github.com/chromedp/chromedp, against `atm-agent-mcp view` and serves
// of mockcodex and mockacp agents (testdata/view_*.txtar).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rogpeppe/go-internal/testscript"
)

// chromiumBin is Debian's Chromium, as tools/install-chromium.sh installs
// it.
const chromiumBin = "/usr/bin/chromium"

// chromiumFlags are the flags every test starts Chromium with: headless,
// as root in a container (no sandbox), no GPU, and none of its own
// traffic (the machines have no network but the package registries).
var chromiumFlags = []chromedp.ExecAllocatorOption{
	chromedp.ExecPath(chromiumBin),
	chromedp.Flag("headless", true),
	chromedp.Flag("no-sandbox", true),
	chromedp.Flag("disable-gpu", true),
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("no-first-run", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-quic", true),
	chromedp.Flag("disable-dev-shm-usage", true),
	chromedp.WindowSize(1360, 900),
}

// browserState is a scenario's view and browser.
type browserState struct {
	view     *exec.Cmd
	viewDone chan struct{} // closed when view exited
	url      string        // the address view printed, with its token
	origin   string        // http://127.0.0.1:port
	token    string
	ctx      context.Context // the browser tab
	cancel   func()
	waitFor  time.Duration
}

// browserHolder keeps a scenario's browserState (env.Values holds it from
// Setup on).
type browserHolder struct{ b *browserState }

func browserOf(ts *testscript.TestScript) *browserState {
	h, _ := ts.Value("browser").(*browserHolder)
	if h == nil || h.b == nil {
		ts.Fatalf("browser: no browser started (browser start)")
	}
	return h.b
}

// TestViewInBrowser runs the view_*.txtar conversations: serves of
// mockcodex (app-server 0.169.0) and mockacp agents, `atm-agent-mcp view`
// of their team, and the page in headless Chromium.
func TestViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	if _, err := os.Stat(chromiumBin); err != nil {
		if os.Getenv("ATM_REQUIRE_REAL_CODEX") == "1" {
			t.Fatalf("%s is missing (make chromium installs it) and the browser tests are required here", chromiumBin)
		}
		t.Skipf("%s is missing: make chromium installs it", chromiumBin)
	}
	p := agentParams(t, "view_*.txtar", "MOCKACP_STATE", "MOCKACP_LOG")
	p.Cmds["browser"] = cmdBrowser
	p.Cmds["viewhttp"] = cmdViewHTTP
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		env.Setenv("MOCKCODEX_VERSION", "0.169.0")
		env.Setenv("MOCKACP_STATE", filepath.Join(env.WorkDir, ".mockacp"))
		env.Values["browser"] = &browserHolder{}
		return os.MkdirAll(filepath.Join(env.WorkDir, ".mockacp"), 0o755)
	}
	p.Condition = backendCondition("app-server")
	testscript.Run(t, p)
}

// startBrowser starts Chromium with a fresh profile in dir.
func startBrowser(ctx context.Context, dir string) (context.Context, func(), error) {
	opts := append(append([]chromedp.ExecAllocatorOption{}, chromiumFlags...), chromedp.UserDataDir(dir))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		bcancel()
		acancel()
		return nil, nil, fmt.Errorf("start chromium: %w", err)
	}
	return bctx, func() { bcancel(); acancel() }, nil
}

// cmdBrowser drives the live view in Chromium:
//
//	browser start [VIEW ARGS...]   start `atm-agent-mcp view VIEW ARGS` and a
//	                               browser on its address; sets VIEW_URL,
//	                               VIEW_ORIGIN, VIEW_HOST and VIEW_TOKEN
//	browser open [#HASH]           load the page (again), at HASH
//	browser wait SELECTOR [REGEXP] wait until an element matches SELECTOR
//	                               (and its text REGEXP); with !, until
//	                               none does
//	browser click SELECTOR         click the first element matching it
//	browser count SELECTOR N       exactly N elements match SELECTOR
//	browser stop                   close the browser, stop view (SIGTERM)
//	                               and check that it exits cleanly
//	browser screenshot FILE        a PNG of the whole page into $WORK/FILE,
//	                               and into $ATM_VIEW_SCREENSHOTS/FILE when
//	                               that is set (the README's pictures)
func cmdBrowser(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: browser start|open|wait|click|count|screenshot ...")
	}
	if neg && args[0] != "wait" {
		ts.Fatalf("browser %s: no negation", args[0])
	}
	switch args[0] {
	case "start":
		browserStart(ts, args[1:])
		return
	}
	b := browserOf(ts)
	switch args[0] {
	case "open":
		u := b.url
		if len(args) > 1 {
			u += args[1]
		}
		ts.Check(chromedp.Do(b.ctx, chromedp.Navigate(u)))
	case "wait":
		if len(args) < 2 || len(args) > 3 {
			ts.Fatalf("usage: browser wait SELECTOR [REGEXP]")
		}
		var re *regexp.Regexp
		if len(args) == 3 {
			re = regexp.MustCompile(args[2])
		}
		deadline := time.Now().Add(b.waitFor)
		var texts []string
		for {
			var err error
			texts, err = chromedp.Run(b.ctx, chromedp.Evaluate[[]string](
				fmt.Sprintf(`[...document.querySelectorAll(%s)].map(e => e.textContent)`, strconv.Quote(args[1]))))
			ts.Check(err)
			found := false
			for _, t := range texts {
				found = found || re == nil || re.MatchString(t)
			}
			if found != neg {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("browser wait %q %v: not within %s; the elements' texts: %q", args[1], args[2:], b.waitFor, texts)
			}
			time.Sleep(50 * time.Millisecond)
		}
	case "click":
		if len(args) != 2 {
			ts.Fatalf("usage: browser click SELECTOR")
		}
		ctx, cancel := context.WithTimeout(b.ctx, b.waitFor)
		defer cancel()
		ts.Check(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(args[1]))))
	case "count":
		if len(args) != 3 {
			ts.Fatalf("usage: browser count SELECTOR N")
		}
		n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, strconv.Quote(args[1]))))
		ts.Check(err)
		if strconv.Itoa(n) != args[2] {
			ts.Fatalf("browser count %q: %d, want %s", args[1], n, args[2])
		}
	case "stop":
		b.cancel()
		_ = syscall.Kill(b.view.Process.Pid, syscall.SIGTERM)
		select {
		case <-b.viewDone:
		case <-time.After(5 * time.Second):
			ts.Fatalf("view did not exit within 5 s of SIGTERM")
		}
		if st := b.view.ProcessState; st == nil || !st.Success() {
			ts.Fatalf("view exited with %v", st)
		}
	case "screenshot":
		if len(args) != 2 {
			ts.Fatalf("usage: browser screenshot FILE")
		}
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), png, 0o644))
		if dir := os.Getenv("ATM_VIEW_SCREENSHOTS"); dir != "" {
			ts.Check(os.WriteFile(filepath.Join(dir, args[1]), png, 0o644))
		}
	default:
		ts.Fatalf("browser: unknown subcommand %q", args[0])
	}
}

// browserStart starts the view and the browser.
func browserStart(ts *testscript.TestScript, args []string) {
	if _, err := os.Stat(chromiumBin); err != nil {
		ts.Fatalf("browser: %s is missing (make chromium installs it)", chromiumBin)
	}
	prog, err := lookPath(ts, "atm-agent-mcp")
	ts.Check(err)
	cmd := exec.Command(prog, append([]string{"view"}, args...)...)
	cmd.Dir = ts.Getenv("WORK")
	env := withoutClaudeSession(os.Environ())
	for _, k := range append(append([]string{}, mcpEnvKeys...), strings.Fields(ts.Getenv("MCP_ENV"))...) {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	ts.Check(err)
	stderr, err := os.Create(ts.MkAbs("view.stderr"))
	ts.Check(err)
	cmd.Stderr = stderr
	ts.Check(cmd.Start())
	done := make(chan struct{})
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
		cmd.Wait()
		close(done)
	}()
	ts.Defer(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		stderr.Close()
	})
	var l string
	select {
	case l = <-line:
	case <-time.After(15 * time.Second):
		ts.Fatalf("view printed no address within 15 s")
	}
	m := regexp.MustCompile(`at (http://(127\.0\.0\.1:[0-9]+))/\?token=([0-9a-f]+)`).FindStringSubmatch(l)
	if m == nil {
		ts.Fatalf("view printed %q, not its address", l)
	}
	b := &browserState{view: cmd, viewDone: done, url: m[0][3:], origin: m[1], token: m[3], waitFor: 20 * time.Second}
	ts.Setenv("VIEW_URL", b.url)
	ts.Setenv("VIEW_ORIGIN", b.origin)
	ts.Setenv("VIEW_HOST", m[2])
	ts.Setenv("VIEW_TOKEN", b.token)
	ctx, cancel, err := startBrowser(context.Background(), ts.MkAbs("chrome-profile"))
	ts.Check(err)
	b.ctx, b.cancel = ctx, cancel
	ts.Defer(cancel)
	ts.Value("browser").(*browserHolder).b = b
	ts.Check(chromedp.Do(b.ctx, chromedp.Navigate(b.url)))
}

// cmdViewHTTP sends one request to the view as a program (not the page)
// would, and prints the status code and the body:
//
//	viewhttp METHOD PATH [-host HOST] [-origin ORIGIN] [-page TOKEN] [BODY]
//
// PATH is sent as given (with or without ?token=); -host sets the Host
// header; -origin the Origin; -page the X-Page-Token. viewhttp page sets
// PAGE_TOKEN to a page token the view hands out with its page.
func cmdViewHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("viewhttp: no negation")
	}
	b := browserOf(ts)
	if len(args) == 1 && args[0] == "page" {
		resp, err := http.Get(b.url)
		ts.Check(err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`data-page="([0-9a-f]+)"`).FindSubmatch(body)
		if m == nil {
			ts.Fatalf("viewhttp page: no page token in %s", body)
		}
		ts.Setenv("PAGE_TOKEN", string(m[1]))
		return
	}
	if len(args) < 2 {
		ts.Fatalf("usage: viewhttp METHOD PATH [-host HOST] [-origin ORIGIN] [-page TOKEN] [BODY]")
	}
	method, path, rest := args[0], args[1], args[2:]
	var host, origin, page, body string
	for len(rest) > 0 {
		switch rest[0] {
		case "-host", "-origin", "-page":
			if len(rest) < 2 {
				ts.Fatalf("viewhttp: %s needs a value", rest[0])
			}
			switch rest[0] {
			case "-host":
				host = rest[1]
			case "-origin":
				origin = rest[1]
			case "-page":
				page = rest[1]
			}
			rest = rest[2:]
		default:
			body, rest = rest[0], rest[1:]
		}
	}
	req, err := http.NewRequest(method, b.origin+path, strings.NewReader(body))
	ts.Check(err)
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if page != "" {
		req.Header.Set("X-Page-Token", page)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	fmt.Fprintf(ts.Stdout(), "%d\n%s\n", resp.StatusCode, out)
}
