package mockcodex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/codexversion"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Default versions reported when MOCKCODEX_VERSION is not set: the tested
// versions of each protocol.
const (
	mcpVersion = codexversion.TestedMCPServer
	appVersion = codexversion.TestedAppServer
)

// Main runs mockcodex as a program: the command line of os.Args, the
// process's environment, stdin, stdout and stderr. It returns the exit code,
// for the caller to pass to os.Exit; a CRASH=<code> prompt makes it return
// that code at once, with the turns of other threads still running, so the
// caller must exit right away.
func Main() int {
	return run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
}

// options are the parsed command line and environment.
type options struct {
	sub       string            // "mcp-server" or "app-server"
	overrides map[string]string // -c key=value (value unquoted)
	model     string            // -m
	version   string
	codexHome string
	getenv    func(string) string
}

// run is Main over the given arguments, environment and streams, so tests
// can call it over pipes.
func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := options{overrides: map[string]string{}, getenv: getenv}
	lg := openLog(getenv("MOCKCODEX_LOG"))
	defer lg.close()
	lg.write(map[string]any{"argv": append([]string{"mockcodex"}, args...)})
	help := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--version" || a == "-V":
			fmt.Fprintf(stdout, "codex-cli %s\n", versionFor(getenv, ""))
			return 0
		case a == "-h" || a == "--help":
			help = true
		case a == "-c" || a == "--config":
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "error: a value is required for '--config <key=value>' but none was supplied\n")
				return 2
			}
			i++
			if err := o.addOverride(args[i]); err != nil {
				fmt.Fprintf(stderr, "Error: %v\n", err)
				return 2
			}
		case strings.HasPrefix(a, "-c=") || strings.HasPrefix(a, "--config="):
			if err := o.addOverride(a[strings.Index(a, "=")+1:]); err != nil {
				fmt.Fprintf(stderr, "Error: %v\n", err)
				return 2
			}
		case a == "-m" || a == "--model":
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "error: a value is required for '--model <MODEL>' but none was supplied\n")
				return 2
			}
			i++
			o.model = args[i]
		case strings.HasPrefix(a, "--model="):
			o.model = strings.TrimPrefix(a, "--model=")
		case a == "mcp-server" || a == "app-server":
			if o.sub != "" {
				fmt.Fprintf(stderr, "error: unexpected argument '%s' found\n", a)
				return 2
			}
			o.sub = a
		case a == "--listen" && o.sub == "app-server":
			// codex app-server --listen stdio:// is the default transport.
			if i+1 < len(args) {
				i++
				if args[i] != "stdio://" {
					fmt.Fprintf(stderr, "mockcodex: only stdio:// is supported, not %q\n", args[i])
					return 2
				}
			}
		default:
			fmt.Fprintf(stderr, "error: unexpected argument '%s' found\n\nUsage: mockcodex [OPTIONS] <mcp-server|app-server>\n", a)
			return 2
		}
	}
	if help {
		fmt.Fprint(stdout, usage(o.sub))
		return 0
	}
	if o.sub == "" {
		fmt.Fprint(stderr, usage(""))
		return 2
	}
	o.version = versionFor(getenv, o.sub)
	o.codexHome = codexHome(getenv)

	if o.sub == "mcp-server" {
		fmt.Fprintln(stderr, "warning: `codex mcp-server` is deprecated and will be removed in a future release.")
	}
	cfg, err := loadConfig(o)
	if err != nil {
		fmt.Fprintf(stderr, "Error: error loading config: %v\n", err)
		return 1
	}
	if s := getenv("MOCKCODEX_START_FAIL"); s != "" {
		code, err := strconv.Atoi(s)
		if err != nil {
			code = 1
		}
		fmt.Fprintf(stderr, "Error: MOCKCODEX_START_FAIL=%s: failing before initialize\n", s)
		return code
	}
	if ms, err := strconv.Atoi(getenv("MOCKCODEX_START_DELAY_MS")); err == nil && ms > 0 {
		// A child slow to start: the handshake waits this long.
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	if getenv("MOCKCODEX_START_HANG") != "" {
		// A child stuck at start: it reads and never answers.
		_, _ = io.Copy(io.Discard, stdin)
		return 0
	}

	out := newOutput(stdout)
	if out.timing, err = openTiming(getenv("MOCKCODEX_TIMING")); err != nil {
		fmt.Fprintf(stderr, "mockcodex: %v; no times are kept\n", err)
	}
	p := newProcess(o, cfg, out, stderr)
	p.log = lg
	served := make(chan struct{})
	go func() {
		defer close(served)
		defer out.timing.close()
		defer p.shutdown()
		in := jsonrpcframe.NewLineReader(stdin, nil)
		if o.sub == "mcp-server" {
			newMCPServer(p).serve(in)
		} else {
			newAppServer(p).serve(in)
		}
		if getenv("MOCKCODEX_EOF") == "linger" {
			// As codex mcp-server with a turn running: stdin EOF does not
			// end the process; a signal does.
			for {
				time.Sleep(time.Hour)
			}
		}
	}()
	select {
	case <-served:
		return 0
	case code := <-p.exit:
		// A crash: no orderly shutdown, as if the process had died here.
		return code
	}
}

func usage(sub string) string {
	switch sub {
	case "mcp-server":
		return "Start Codex as an MCP server (stdio) [mock]\n\nUsage: mockcodex mcp-server [OPTIONS]\n\nOptions:\n  -c, --config <key=value>  Override a configuration value\n  -h, --help                Print help\n"
	case "app-server":
		return "[experimental] Run the app server or related tooling [mock]\n\nUsage: mockcodex app-server [OPTIONS]\n\nOptions:\n  -c, --config <key=value>  Override a configuration value\n      --listen <URL>        Transport endpoint URL (only stdio://)\n  -h, --help                Print help\n"
	}
	return "Codex CLI (mock)\n\nUsage: mockcodex [OPTIONS] <COMMAND>\n\nCommands:\n  mcp-server  Start Codex as an MCP server (stdio), like codex " + mcpVersion + "\n  app-server  Run the app server (stdio), like codex " + appVersion + "\n\nOptions:\n  -c, --config <key=value>  Override a configuration value\n  -m, --model <MODEL>       Model the agent should use\n  -h, --help                Print help\n  -V, --version             Print version\n"
}

func (o *options) addOverride(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("invalid override (missing '='): %s", kv)
	}
	o.overrides[strings.TrimSpace(k)] = unquoteTOML(strings.TrimSpace(v))
	return nil
}

func versionFor(getenv func(string) string, sub string) string {
	if v := getenv("MOCKCODEX_VERSION"); v != "" {
		return v
	}
	if sub == "app-server" {
		return appVersion
	}
	return mcpVersion
}

func codexHome(getenv func(string) string) string {
	if h := getenv("CODEX_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}

// config is the part of config.toml (and -c overrides) the mock honours.
type config struct {
	model          string
	modelProvider  string
	approvalPolicy string
	sandboxMode    string
}

// loadConfig reads top-level `key = "value"` lines of $CODEX_HOME/config.toml
// and applies -c overrides and -m.
func loadConfig(o options) (config, error) {
	c := config{model: "mock-model", modelProvider: "mock", approvalPolicy: "on-request", sandboxMode: "workspace-write"}
	vals := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(o.codexHome, "config.toml")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				break // only top-level keys
			}
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				vals[strings.TrimSpace(k)] = unquoteTOML(strings.TrimSpace(v))
			}
		}
	}
	for k, v := range o.overrides {
		vals[k] = v
	}
	if v, ok := vals["model"]; ok {
		c.model = v
	}
	if v, ok := vals["model_provider"]; ok {
		c.modelProvider = v
	}
	if v, ok := vals["approval_policy"]; ok {
		if v == "untrusted" {
			return c, fmt.Errorf(`approval_policy = "untrusted" is no longer supported; remove this setting`)
		}
		c.approvalPolicy = v
	}
	if v, ok := vals["sandbox_mode"]; ok {
		c.sandboxMode = v
	}
	if o.model != "" {
		c.model = o.model
	}
	return c, nil
}

func unquoteTOML(v string) string {
	if i := strings.Index(v, " #"); i >= 0 && !strings.HasPrefix(v, `"`) {
		v = strings.TrimSpace(v[:i])
	}
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
		return strings.Trim(v, `"'`)
	}
	return v
}

// output owns stdout: every message and every raw write (GARBAGE) goes
// through it, one at a time.
type output struct {
	mu     sync.Mutex
	raw    io.Writer
	w      jsonrpcframe.Writer
	timing *timing // MOCKCODEX_TIMING, or nil
}

func newOutput(w io.Writer) *output {
	return &output{raw: w, w: jsonrpcframe.NewLineWriter(w)}
}

// send writes one message; errors (a closed stdout) are ignored, as the
// process ends at stdin EOF anyway.
func (o *output) send(m *jsonrpcframe.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m.IsResponse() {
		o.timing.mark(timingResponseWrite)
	}
	_ = o.w.Write(m)
}

// writeRaw writes bytes that are not a message.
func (o *output) writeRaw(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.raw.Write(b)
}

// process is what both servers share: options, config, stdout, stderr, the
// server-request id counter, the model counter and the tool servers to stop.
type process struct {
	opts options
	cfg  config
	out  *output
	errw *errWriter

	mu        sync.Mutex
	nextReqID int64 // server→client request ids, from 0
	modelN    int   // model responses, for msg_mock_N / call_mock_N ids
	servers   []*toolServer

	log *eventLog

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	exit chan int // the code run returns at once (CRASH); see exitNow
}

func (p *process) getenv(k string) string { return p.opts.getenv(k) }

func newProcess(o options, cfg config, out *output, stderr io.Writer) *process {
	ctx, cancel := context.WithCancel(context.Background())
	return &process{opts: o, cfg: cfg, out: out, errw: newErrWriter(stderr), ctx: ctx, cancel: cancel, exit: make(chan int, 1)}
}

// exitNow ends the process with code the way os.Exit would: run returns
// code at once, without shutting down, and Main's caller exits with it.
// The calling goroutine never returns, so the turn goes no further; only
// the first code counts when several turns crash at once.
func (p *process) exitNow(code int) {
	select {
	case p.exit <- code:
	default:
	}
	select {}
}

// logf writes a tracing-style line to stderr. It never blocks: when stderr
// is not drained, log lines are dropped.
func (p *process) logf(level, target, format string, args ...any) {
	line := fmt.Sprintf("%s %5s %s: %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), level, target, fmt.Sprintf(format, args...))
	p.errw.tryWrite([]byte(line))
}

// errWriter owns stderr: one goroutine writes what the others queue, so a
// full stderr pipe blocks only that goroutine (and STDERR_FLOOD's), never a
// turn or stdout.
type errWriter struct {
	ch   chan []byte
	quit chan struct{}
	done chan struct{}
}

func newErrWriter(w io.Writer) *errWriter {
	e := &errWriter{ch: make(chan []byte, 1024), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for {
			select {
			case b := <-e.ch:
				if _, err := w.Write(b); err != nil {
					return
				}
			case <-e.quit:
				for {
					select {
					case b := <-e.ch:
						if _, err := w.Write(b); err != nil {
							return
						}
					default:
						return
					}
				}
			}
		}
	}()
	return e
}

// tryWrite queues b, or drops it when the queue is full.
func (e *errWriter) tryWrite(b []byte) {
	select {
	case e.ch <- b:
	default:
	}
}

// write queues b, waiting for room until the writer stops.
func (e *errWriter) write(b []byte) bool {
	select {
	case e.ch <- b:
		return true
	case <-e.quit:
		return false
	}
}

// close flushes what is queued, waiting at most d for a blocked stderr.
func (e *errWriter) close(d time.Duration) {
	close(e.quit)
	select {
	case <-e.done:
	case <-time.After(d):
	}
}

func (p *process) serverRequestID() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.nextReqID
	p.nextReqID++
	return id
}

func (p *process) nextModelN() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modelN++
	return p.modelN
}

func (p *process) addServer(s *toolServer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.servers = append(p.servers, s)
}

// shutdown cancels every turn and SIGTERMs every tool server. Turns blocked
// forever (HANG, a JSON-RPC error answer) are not waited for.
func (p *process) shutdown() {
	p.cancel()
	p.mu.Lock()
	servers := p.servers
	p.servers = nil
	p.mu.Unlock()
	for _, s := range servers {
		s.stop()
	}
	p.errw.close(time.Second)
}

// userAgent is the user agent Codex reports for a client.
func userAgent(prefix, version, clientName, clientVersion string) string {
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		arch = "aarch64"
	}
	term := os.Getenv("TERM")
	if term == "" {
		term = "unknown"
	}
	return fmt.Sprintf("%s/%s (%s; %s) %s (%s; %s)", prefix, version, osName(), arch, term, clientName, clientVersion)
}

func osName() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	var name, ver string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "NAME="); ok {
			name = strings.Trim(v, `"`)
		}
		if v, ok := strings.CutPrefix(l, "VERSION_ID="); ok {
			ver = strings.Trim(v, `"`)
		}
	}
	name, _, _ = strings.Cut(name, " ")
	if name == "" {
		return runtime.GOOS
	}
	return name + " " + ver
}

// eventLog is the MOCKCODEX_LOG file: one JSON line per argv and per
// received message. A nil *eventLog logs nothing.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

func openLog(path string) *eventLog {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return &eventLog{f: f}
}

func (l *eventLog) close() {
	if l != nil {
		_ = l.f.Close()
	}
}

func (l *eventLog) write(v map[string]any) {
	if l == nil {
		return
	}
	v["pid"] = os.Getpid()
	v["t"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(append(b, '\n'))
}

// logReceived records one message read from stdin; a line that was not a
// message is recorded as "raw". A request's read is marked in the timing
// file.
func logReceived(p *process, m *jsonrpcframe.Message, bad []byte) {
	if m != nil && m.IsRequest() {
		p.out.timing.mark(timingRequestRead)
	}
	if p.log == nil {
		return
	}
	if m != nil {
		if b, err := m.MarshalJSON(); err == nil {
			p.log.write(map[string]any{"msg": json.RawMessage(b)})
		}
		return
	}
	p.log.write(map[string]any{"raw": string(bad)})
}
