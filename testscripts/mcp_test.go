package testscripts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// mcpTimeout bounds every wait of the mcp command (and of waitfile),
// unless the scenario's MCP_TIMEOUT_SECS says otherwise (waitLimit): the
// suites of real agents, which start in tens of seconds on a loaded
// machine, give more.
const mcpTimeout = 40 * time.Second

// waitLimit is the bound of a scenario's waits: MCP_TIMEOUT_SECS, else
// mcpTimeout.
func waitLimit(ts *testscript.TestScript) time.Duration {
	if n, err := strconv.Atoi(ts.Getenv("MCP_TIMEOUT_SECS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return mcpTimeout
}

// mcpEnvKeys are the variables of the scenario passed to a started program
// (testscript does not expose its whole environment); MCP_ENV may name more.
var mcpEnvKeys = []string{"PATH", "HOME", "ATM_HOME", "WORK", "TMPDIR", "GIT_CEILING_DIRECTORIES", "CODEX_HOME", "ATM_TEAM", "ATM_IDENTITY",
	"ATM_CONFIG", "MOCKCODEX_LOG", "MOCKCODEX_VERSION", "MOCKCODEX_STALE_LISTENER", "MOCKCODEX_DELAY_MS", "MOCKCODEX_START_FAIL"}

// mcpState holds the programs one scenario started.
type mcpState struct {
	mu    sync.Mutex
	procs map[string]*mcpProc
}

// mcpProc is one MCP server under test, driven over its stdin/stdout.
type mcpProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      jsonrpcframe.Writer
	stderr *os.File
	done   chan struct{}
	err    error

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every message
	nextID   int64
	resps    map[jsonrpcframe.ID]*jsonrpcframe.Message
	notes    []*jsonrpcframe.Message
	requests []*jsonrpcframe.Message
	answers  map[string]json.RawMessage
	bad      []string // stdout lines that are not JSON-RPC 2.0
	header   bool
	meta     json.RawMessage // set by mcp meta: the _meta of every later request
}

func mcpStateOf(ts *testscript.TestScript) *mcpState {
	return ts.Value("mcp").(*mcpState)
}

// cmdMCP drives MCP servers in a scenario. Subcommands:
//
//	mcp start NAME [-header] PROGRAM ARGS...   start PROGRAM (found in PATH) with pipes
//	mcp call NAME METHOD [PARAMS] [VAR=PATH...] request, wait, print the response; save values
//	mcp send NAME VAR METHOD [PARAMS]          request without waiting; its id goes into $VAR
//	mcp wait NAME ID [VAR=PATH...]             wait for the response to id; print it
//	mcp notify NAME METHOD [PARAMS]            send a notification
//	mcp meta NAME JSON                         every later request carries JSON as _meta (a 2026-07-28 client); "-" stops
//	mcp raw NAME TEXT                          write TEXT and a newline to stdin
//	mcp answer NAME METHOD RESULT              answer the server's METHOD requests with RESULT ("-": never)
//	mcp requests NAME [METHOD]                 print the server's requests so far, then "requests: N"
//	mcp notes NAME METHOD                      print the notifications of METHOD so far
//	mcp wait-note NAME METHOD REGEXP           wait for a notification of METHOD matching REGEXP
//	mcp until NAME METHOD PARAMS PATH VALUE    repeat a request until PATH of its response is VALUE
//	mcp stop NAME                              close stdin; the program must exit 0 with pure stdout
//	mcp signal NAME SIGNAL                     send SIGTERM, SIGINT or SIGKILL
//	mcp ladder NAME                            stop it as Claude Code does: SIGINT; SIGTERM if alive 100 ms later;
//	                                           SIGKILL if alive 400 ms after that; print the signals sent
//	mcp wait-exit NAME [CODE]                  wait for the exit (code 0 unless given; "signal" for a kill; "any")
//	mcp pid NAME VAR                           put the program's pid into $VAR
//
// PARAMS and RESULT are JSON with $VARs expanded by testscript. Output is one
// compact JSON message per line, so "stdout" and "json stdout PATH VALUE"
// check it.
func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mcp SUBCOMMAND NAME ...")
	}
	st := mcpStateOf(ts)
	sub, name, rest := args[0], args[1], args[2:]
	if sub == "start" {
		if neg {
			ts.Fatalf("unsupported: ! mcp start")
		}
		mcpStart(ts, st, name, rest)
		return
	}
	st.mu.Lock()
	p := st.procs[name]
	st.mu.Unlock()
	if p == nil {
		ts.Fatalf("mcp: no program named %q (mcp start first)", name)
	}
	switch sub {
	case "call":
		if len(rest) < 1 {
			ts.Fatalf("usage: mcp call NAME METHOD [PARAMS] [VAR=PATH...]")
		}
		params, saves := splitParams(rest[1:])
		id := p.request(ts, rest[0], params)
		resp := p.waitResponse(ts, id)
		p.print(ts, resp)
		checkOutcome(ts, neg, resp, "mcp call "+rest[0])
		saveValues(ts, resp, saves)
	case "send":
		if len(rest) < 2 {
			ts.Fatalf("usage: mcp send NAME VAR METHOD [PARAMS]")
		}
		params := ""
		if len(rest) > 2 {
			params = rest[2]
		}
		id := p.request(ts, rest[1], params)
		ts.Setenv(rest[0], id.String())
	case "wait":
		if len(rest) < 1 {
			ts.Fatalf("usage: mcp wait NAME ID [VAR=PATH...]")
		}
		id, err := jsonrpcframe.ParseID([]byte(rest[0]))
		if err != nil {
			ts.Fatalf("mcp wait: bad id %q", rest[0])
		}
		resp := p.waitResponse(ts, id)
		p.print(ts, resp)
		checkOutcome(ts, neg, resp, "mcp wait "+rest[0])
		_, saves := splitParams(rest[1:])
		saveValues(ts, resp, saves)
	case "notify":
		params := ""
		if len(rest) > 1 {
			params = rest[1]
		}
		m, err := jsonrpcframe.NewNotification(rest[0], rawParams(ts, params))
		ts.Check(err)
		ts.Check(p.w.Write(m))
	case "meta":
		// mcp meta NAME JSON: every later request carries JSON as its
		// _meta, as a 2026-07-28 client's do; "-" stops it.
		if len(rest) != 1 {
			ts.Fatalf("usage: mcp meta NAME JSON|-")
		}
		p.mu.Lock()
		p.meta = nil
		if rest[0] != "-" {
			p.meta = json.RawMessage(rawParams(ts, rest[0]).(json.RawMessage))
		}
		p.mu.Unlock()
	case "raw":
		_, err := io.WriteString(p.stdin, strings.Join(rest, " ")+"\n")
		ts.Check(err)
	case "answer":
		if len(rest) != 2 {
			ts.Fatalf("usage: mcp answer NAME METHOD RESULT")
		}
		p.mu.Lock()
		if rest[1] == "-" { // never answer
			p.answers[rest[0]] = nil
			p.mu.Unlock()
			return
		}
		if !json.Valid([]byte(rest[1])) {
			p.mu.Unlock()
			ts.Fatalf("mcp answer: RESULT is not JSON: %s", rest[1])
		}
		p.answers[rest[0]] = json.RawMessage(rest[1])
		p.mu.Unlock()
	case "requests":
		p.mu.Lock()
		n := 0
		for _, m := range p.requests {
			if len(rest) == 0 || m.Method == rest[0] {
				fmt.Fprintln(ts.Stdout(), mustMarshal(m))
				n++
			}
		}
		p.mu.Unlock()
		fmt.Fprintf(ts.Stdout(), "requests: %d\n", n)
	case "notes":
		p.mu.Lock()
		for _, m := range p.notes {
			if len(rest) == 0 || m.Method == rest[0] {
				fmt.Fprintln(ts.Stdout(), mustMarshal(m))
			}
		}
		p.mu.Unlock()
	case "wait-note":
		if len(rest) != 2 {
			ts.Fatalf("usage: mcp wait-note NAME METHOD TEXT")
		}
		re, err := regexp.Compile(rest[1])
		if err != nil {
			ts.Fatalf("mcp wait-note: %v", err)
		}
		p.waitFor(ts, "a "+rest[0]+" notification matching "+rest[1], func() bool {
			for _, m := range p.notes {
				if m.Method == rest[0] && re.MatchString(mustMarshal(m)) {
					fmt.Fprintln(ts.Stdout(), mustMarshal(m))
					return true
				}
			}
			return false
		})
	case "until":
		if len(rest) != 4 {
			ts.Fatalf("usage: mcp until NAME METHOD PARAMS PATH VALUE")
		}
		deadline := time.Now().Add(waitLimit(ts))
		for {
			resp := p.waitResponse(ts, p.request(ts, rest[0], rest[1]))
			var doc any
			ts.Check(json.Unmarshal([]byte(mustMarshal(resp)), &doc))
			v, err := jsonAt(doc, rest[2])
			got := ""
			if err == nil {
				if str, ok := v.(string); ok {
					got = str
				} else {
					b, _ := json.Marshal(v)
					got = string(b)
				}
			}
			if err == nil && got == rest[3] {
				p.print(ts, resp)
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("mcp until: %s is %q (%v), want %q after %s", rest[2], got, err, rest[3], waitLimit(ts))
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "stop":
		p.stdin.Close()
		p.waitExit(ts, "0")
		p.checkPure(ts)
	case "signal":
		sig := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGKILL": syscall.SIGKILL}[rest[0]]
		if sig == 0 {
			ts.Fatalf("mcp signal: unknown signal %q", rest[0])
		}
		ts.Check(p.cmd.Process.Signal(sig))
	case "pid":
		if len(rest) != 1 {
			ts.Fatalf("usage: mcp pid NAME VAR")
		}
		ts.Setenv(rest[0], strconv.Itoa(p.cmd.Process.Pid))
	case "ladder":
		// Claude Code 2.1.332's stop of a stdio MCP server (notes:
		// claude-code.md, "How Claude Code stops a stdio MCP server").
		sent := []string{"SIGINT"}
		ts.Check(p.cmd.Process.Signal(syscall.SIGINT))
	ladder:
		for _, step := range []struct {
			after time.Duration
			sig   syscall.Signal
			name  string
		}{{100 * time.Millisecond, syscall.SIGTERM, "SIGTERM"}, {400 * time.Millisecond, syscall.SIGKILL, "SIGKILL"}} {
			select {
			case <-p.done:
				break ladder
			case <-time.After(step.after):
			}
			if err := p.cmd.Process.Signal(step.sig); err != nil {
				break // it exited meanwhile
			}
			sent = append(sent, step.name)
		}
		fmt.Fprintf(ts.Stdout(), "ladder: %s\n", strings.Join(sent, " "))
	case "wait-exit":
		code := "0"
		if len(rest) > 0 {
			code = rest[0]
		}
		p.waitExit(ts, code)
		p.checkPure(ts)
	default:
		ts.Fatalf("mcp: unknown subcommand %q", sub)
	}
}

func mcpStart(ts *testscript.TestScript, st *mcpState, name string, args []string) {
	header := false
	if len(args) > 0 && args[0] == "-header" {
		header, args = true, args[1:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: mcp start NAME [-header] PROGRAM ARGS...")
	}
	prog, err := lookPath(ts, args[0])
	ts.Check(err)
	cmd := exec.Command(prog, args[1:]...)
	cmd.Dir = ts.Getenv("WORK")
	env := withoutClaudeSession(os.Environ()) // a scenario says what Claude Code gives serve (ccsock_test.go)
	keys := append([]string{}, mcpEnvKeys...)
	keys = append(keys, strings.Fields(ts.Getenv("MCP_ENV"))...)
	for _, k := range keys {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	ts.Check(err)
	stdout, err := cmd.StdoutPipe()
	ts.Check(err)
	stderr, err := os.Create(filepath.Join(ts.Getenv("WORK"), name+".stderr"))
	ts.Check(err)
	cmd.Stderr = stderr
	ts.Check(cmd.Start())
	p := &mcpProc{name: name, cmd: cmd, stdin: stdin, stderr: stderr, done: make(chan struct{}), changed: make(chan struct{}),
		resps: map[jsonrpcframe.ID]*jsonrpcframe.Message{}, answers: map[string]json.RawMessage{}, header: header}
	if header {
		p.w = jsonrpcframe.NewHeaderWriter(stdin)
	} else {
		p.w = jsonrpcframe.NewLineWriter(stdin)
	}
	go p.read(stdout)
	st.mu.Lock()
	if st.procs[name] != nil {
		st.mu.Unlock()
		ts.Fatalf("mcp: %q is already started", name)
	}
	st.procs[name] = p
	st.mu.Unlock()
	ts.Defer(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		stderr.Close()
	})
}

func lookPath(ts *testscript.TestScript, prog string) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		p := filepath.Join(dir, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("mcp start: %s not found in PATH", prog)
}

// read collects everything the program writes to stdout.
func (p *mcpProc) read(stdout io.Reader) {
	defer func() {
		p.err = p.cmd.Wait()
		close(p.done)
		p.signal()
	}()
	br := bufio.NewReaderSize(stdout, 1<<20)
	var r jsonrpcframe.Reader
	if p.header {
		r = jsonrpcframe.NewHeaderReader(br, nil)
	} else {
		r = &pureLineReader{p: p, br: br}
	}
	for {
		m, err := r.Read()
		if err != nil {
			var bad *jsonrpcframe.MessageError
			if errors.As(err, &bad) {
				p.mu.Lock()
				p.bad = append(p.bad, bad.Error()+": "+string(bad.Raw))
				p.mu.Unlock()
				continue
			}
			return
		}
		if !m.Versioned {
			p.mu.Lock()
			p.bad = append(p.bad, "no \"jsonrpc\":\"2.0\": "+mustMarshal(m))
			p.mu.Unlock()
		}
		p.mu.Lock()
		switch m.Kind() {
		case jsonrpcframe.KindResponse:
			p.resps[m.ID] = m
		case jsonrpcframe.KindNotification:
			p.notes = append(p.notes, m)
		case jsonrpcframe.KindRequest:
			p.requests = append(p.requests, m)
			result, ok := p.answers[m.Method]
			if !ok {
				result = json.RawMessage(`{"action":"decline"}`)
			}
			if ok && result == nil {
				break // "mcp answer NAME METHOD -": never answer
			}
			go func() {
				resp, err := jsonrpcframe.NewResponse(m.ID, result)
				if err == nil {
					_ = p.w.Write(resp)
				}
			}()
		}
		p.mu.Unlock()
		p.signal()
	}
}

// pureLineReader reads NDJSON and records any line that is not a message.
type pureLineReader struct {
	p  *mcpProc
	br *bufio.Reader
}

func (r *pureLineReader) Read() (*jsonrpcframe.Message, error) {
	for {
		line, err := r.br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			m, perr := jsonrpcframe.Parse(line)
			if perr != nil {
				r.p.mu.Lock()
				r.p.bad = append(r.p.bad, string(bytes.TrimSpace(line)))
				r.p.mu.Unlock()
				continue
			}
			return m, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *mcpProc) signal() {
	p.mu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// waitFor waits until cond (called with p.mu held) holds.
func (p *mcpProc) waitFor(ts *testscript.TestScript, what string, cond func() bool) {
	limit := waitLimit(ts)
	deadline := time.After(limit)
	for {
		p.mu.Lock()
		ok := cond()
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-p.done:
			p.mu.Lock()
			ok := cond()
			p.mu.Unlock()
			if ok {
				return
			}
			ts.Fatalf("%s exited while waiting for %s: %v\nstderr:\n%s", p.name, what, p.err, tail(p.stderr.Name(), 30))
		case <-deadline:
			ts.Fatalf("%s: timed out after %s waiting for %s\nstderr:\n%s", p.name, limit, what, tail(p.stderr.Name(), 30))
		}
	}
}

func (p *mcpProc) request(ts *testscript.TestScript, method, params string) jsonrpcframe.ID {
	p.mu.Lock()
	p.nextID++
	id := jsonrpcframe.IntID(p.nextID)
	p.mu.Unlock()
	var body any = rawParams(ts, params)
	p.mu.Lock()
	meta := p.meta
	p.mu.Unlock()
	if meta != nil {
		// A modern client's request: its _meta goes with it.
		obj := map[string]json.RawMessage{}
		if params != "" {
			ts.Check(json.Unmarshal([]byte(params), &obj))
		}
		if _, ok := obj["_meta"]; !ok {
			obj["_meta"] = meta
		}
		body = obj
	}
	m, err := jsonrpcframe.NewRequest(id, method, body)
	ts.Check(err)
	ts.Check(p.w.Write(m))
	return id
}

func (p *mcpProc) waitResponse(ts *testscript.TestScript, id jsonrpcframe.ID) *jsonrpcframe.Message {
	var resp *jsonrpcframe.Message
	p.waitFor(ts, "the response to request "+id.String(), func() bool {
		resp = p.resps[id]
		return resp != nil
	})
	return resp
}

func (p *mcpProc) print(ts *testscript.TestScript, m *jsonrpcframe.Message) {
	fmt.Fprintln(ts.Stdout(), mustMarshal(m))
}

func (p *mcpProc) waitExit(ts *testscript.TestScript, code string) {
	select {
	case <-p.done:
	case <-time.After(waitLimit(ts)):
		ts.Fatalf("%s did not exit within %s\nstderr:\n%s", p.name, waitLimit(ts), tail(p.stderr.Name(), 30))
	}
	got := "0"
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			got = "signal"
		} else {
			got = fmt.Sprint(ee.ExitCode())
		}
	} else if p.err != nil {
		ts.Fatalf("%s: %v", p.name, p.err)
	}
	if got != code && code != "any" {
		ts.Fatalf("%s exited with %s, want %s\nstderr:\n%s", p.name, got, code, tail(p.stderr.Name(), 30))
	}
}

// checkPure fails when stdout carried anything but JSON-RPC 2.0 messages.
func (p *mcpProc) checkPure(ts *testscript.TestScript) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bad) > 0 {
		ts.Fatalf("%s wrote %d stdout line(s) that are not JSON-RPC 2.0 messages:\n%s", p.name, len(p.bad), strings.Join(p.bad, "\n"))
	}
}

// checkOutcome fails unless the response is a result (or, negated, an
// error).
func checkOutcome(ts *testscript.TestScript, neg bool, resp *jsonrpcframe.Message, what string) {
	switch {
	case neg && resp.Error == nil:
		ts.Fatalf("%s: got a result, want an error", what)
	case !neg && resp.Error != nil:
		ts.Fatalf("%s: error %s", what, resp.Error)
	}
}

func rawParams(ts *testscript.TestScript, params string) any {
	if strings.TrimSpace(params) == "" {
		return nil
	}
	if !json.Valid([]byte(params)) {
		ts.Fatalf("mcp: params are not JSON: %s", params)
	}
	return json.RawMessage(params)
}

// splitParams separates an optional JSON params argument from VAR=PATH
// saves.
func splitParams(args []string) (string, []string) {
	if len(args) > 0 && !isSave(args[0]) {
		return args[0], args[1:]
	}
	return "", args
}

func isSave(a string) bool {
	i := strings.IndexByte(a, '=')
	if i <= 0 || strings.ContainsAny(a[:i], "{}[]\" ") {
		return false
	}
	return strings.ToUpper(a[:i]) == a[:i]
}

// saveValues sets scenario variables from the message: VAR=result.x.y.
func saveValues(ts *testscript.TestScript, m *jsonrpcframe.Message, saves []string) {
	if len(saves) == 0 {
		return
	}
	var doc any
	ts.Check(json.Unmarshal([]byte(mustMarshal(m)), &doc))
	for _, s := range saves {
		k, path, ok := strings.Cut(s, "=")
		if !ok || !isSave(s) {
			ts.Fatalf("mcp: %q is not VAR=PATH", s)
		}
		v, err := jsonAt(doc, path)
		if err != nil {
			ts.Fatalf("mcp: save %s: %v", k, err)
		}
		if str, ok := v.(string); ok {
			ts.Setenv(k, str)
		} else {
			b, _ := json.Marshal(v)
			ts.Setenv(k, string(b))
		}
	}
}

func mustMarshal(m *jsonrpcframe.Message) string {
	b, err := m.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
