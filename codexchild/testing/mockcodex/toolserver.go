package mockcodex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// serverConfig is one mcp_servers.<name> entry of a thread's config.
type serverConfig struct {
	name         string
	command      string
	args         []string
	env          map[string]string
	envVars      []string
	cwd          string
	approvalMode string            // default_tools_approval_mode
	toolModes    map[string]string // tools.<tool>.approval_mode
	required     bool
	timeout      time.Duration
}

// expandConfig turns a config object with dotted keys ("mcp_servers.x.env.K")
// and nested objects into one nested map.
func expandConfig(cfg map[string]any) map[string]any {
	out := map[string]any{}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		setPath(out, strings.Split(k, "."), cfg[k])
	}
	return out
}

func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if vm, ok := v.(map[string]any); ok {
		dst, ok := m[last].(map[string]any)
		if !ok {
			dst = map[string]any{}
			m[last] = dst
		}
		for _, k := range sortedKeys(vm) {
			setPath(dst, strings.Split(k, "."), vm[k])
		}
		return
	}
	m[last] = v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// serverConfigs reads mcp_servers from an expanded config, sorted by name.
func serverConfigs(cfg map[string]any) []serverConfig {
	servers, _ := cfg["mcp_servers"].(map[string]any)
	var out []serverConfig
	for _, name := range sortedKeys(servers) {
		m, ok := servers[name].(map[string]any)
		if !ok {
			continue
		}
		sc := serverConfig{name: name, env: map[string]string{}, toolModes: map[string]string{}, timeout: 10 * time.Second}
		sc.command, _ = m["command"].(string)
		if a, ok := m["args"].([]any); ok {
			for _, x := range a {
				sc.args = append(sc.args, fmt.Sprint(x))
			}
		}
		if e, ok := m["env"].(map[string]any); ok {
			for k, v := range e {
				sc.env[k] = fmt.Sprint(v)
			}
		}
		if e, ok := m["env_vars"].([]any); ok {
			for _, v := range e {
				sc.envVars = append(sc.envVars, fmt.Sprint(v))
			}
		}
		sc.cwd, _ = m["cwd"].(string)
		sc.approvalMode, _ = m["default_tools_approval_mode"].(string)
		sc.required, _ = m["required"].(bool)
		if n, ok := m["startup_timeout_sec"].(float64); ok && n > 0 {
			sc.timeout = time.Duration(n * float64(time.Second))
		}
		if tools, ok := m["tools"].(map[string]any); ok {
			for tn, tv := range tools {
				if tm, ok := tv.(map[string]any); ok {
					if mode, ok := tm["approval_mode"].(string); ok {
						sc.toolModes[tn] = mode
					}
				}
			}
		}
		out = append(out, sc)
	}
	return out
}

// toolServer is a running per-thread stdio MCP server.
type toolServer struct {
	cfg   serverConfig
	cmd   *exec.Cmd
	stdin io.WriteCloser
	w     jsonrpcframe.Writer

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *jsonrpcframe.Message
	closed  bool
	tools   map[string]toolInfo
	done    chan struct{}
}

type toolInfo struct {
	readOnly bool
}

// startToolServer spawns the server with only HOME, LANG, PATH, SHELL and
// TERM from our environment plus its env and env_vars, and does the MCP
// handshake. The error text is Codex's.
func (p *process) startToolServer(sc serverConfig, cwd string) (*toolServer, error) {
	if sc.command == "" {
		return nil, errors.New("missing command")
	}
	c := exec.Command(sc.command, sc.args...)
	var env []string
	for _, k := range []string{"HOME", "LANG", "PATH", "SHELL", "TERM"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sc.envVars {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range sc.env {
		env = append(env, k+"="+v)
	}
	c.Env = env
	c.Dir = cwd
	if sc.cwd != "" {
		c.Dir = sc.cwd
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stderr = &lockedWriter{p: p}
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, errors.New(osErrorText(err))
	}
	s := &toolServer{cfg: sc, cmd: c, stdin: stdin, w: jsonrpcframe.NewLineWriter(stdin),
		pending: map[int64]chan *jsonrpcframe.Message{}, tools: map[string]toolInfo{}, done: make(chan struct{})}
	go s.readLoop(jsonrpcframe.NewLineReader(stdout, nil))
	go func() { _ = c.Wait() }()
	p.addServer(s)

	ctx, cancel := context.WithTimeout(p.ctx, sc.timeout)
	defer cancel()
	timeoutErr := fmt.Errorf("MCP client for `%s` timed out after %d seconds. Add or adjust `startup_timeout_sec` in your config.toml:\n[mcp_servers.%s]\nstartup_timeout_sec = XX", sc.name, int(sc.timeout.Seconds()), sc.name)
	if _, err := s.request(ctx, "initialize", o("protocolVersion", "2025-06-18",
		"capabilities", o("elicitation", o("form", obj{}, "url", obj{})),
		"clientInfo", o("name", "codex-mcp-client", "title", "Codex", "version", p.opts.version))); err != nil {
		s.stop()
		if ctx.Err() != nil {
			return nil, timeoutErr
		}
		return nil, fmt.Errorf("handshaking with MCP server failed: %v", err)
	}
	n, _ := jsonrpcframe.NewNotification("notifications/initialized", nil)
	s.mu.Lock()
	_ = s.w.Write(n)
	s.mu.Unlock()
	res, err := s.request(ctx, "tools/list", obj{})
	if err != nil {
		s.stop()
		if ctx.Err() != nil {
			return nil, timeoutErr
		}
		return nil, fmt.Errorf("tools/list failed: %v", err)
	}
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Annotations struct {
				ReadOnlyHint bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(res, &list)
	s.mu.Lock()
	for _, t := range list.Tools {
		s.tools[t.Name] = toolInfo{readOnly: t.Annotations.ReadOnlyHint}
	}
	s.mu.Unlock()
	return s, nil
}

// osErrorText renders a spawn error the way Rust's io::Error does.
func osErrorText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return "No such file or directory (os error 2)"
		case syscall.EACCES:
			return "Permission denied (os error 13)"
		}
		return fmt.Sprintf("%s (os error %d)", errno.Error(), int(errno))
	}
	if errors.Is(err, exec.ErrNotFound) {
		return "No such file or directory (os error 2)"
	}
	return err.Error()
}

type lockedWriter struct{ p *process }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.errw.write(append([]byte(nil), b...))
	return len(b), nil
}

func (s *toolServer) readLoop(r jsonrpcframe.Reader) {
	defer func() {
		s.mu.Lock()
		s.closed = true
		for id, ch := range s.pending {
			close(ch)
			delete(s.pending, id)
		}
		s.mu.Unlock()
		close(s.done)
	}()
	for {
		m, err := r.Read()
		if err != nil {
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				continue
			}
			return
		}
		switch m.Kind() {
		case jsonrpcframe.KindResponse:
			n, ok := m.ID.Int64()
			if !ok {
				continue
			}
			s.mu.Lock()
			ch := s.pending[n]
			delete(s.pending, n)
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case jsonrpcframe.KindRequest:
			// roots/list, elicitation, sampling: not offered by the mock.
			resp := jsonrpcframe.NewErrorResponse(m.ID, &jsonrpcframe.Error{Code: jsonrpcframe.CodeMethodNotFound, Message: "method not found: " + m.Method})
			s.mu.Lock()
			_ = s.w.Write(resp)
			s.mu.Unlock()
		}
	}
}

func (s *toolServer) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("connection closed")
	}
	id := s.nextID
	s.nextID++
	ch := make(chan *jsonrpcframe.Message, 1)
	s.pending[id] = ch
	req, err := jsonrpcframe.NewRequest(jsonrpcframe.IntID(id), method, params)
	if err == nil {
		err = s.w.Write(req)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, errors.New("connection closed")
		}
		if e := m.Err(); e != nil {
			return nil, fmt.Errorf("%s", e.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (s *toolServer) hasTool(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tools[name]
	return ok
}

func (s *toolServer) needsApproval(tool string) bool {
	s.mu.Lock()
	ti := s.tools[tool]
	s.mu.Unlock()
	mode := s.cfg.approvalMode
	if m, ok := s.cfg.toolModes[tool]; ok {
		mode = m
	}
	return mode != "approve" && !ti.readOnly
}

// callResult is a tools/call result: the raw result and its text contents.
type callResult struct {
	raw     json.RawMessage
	texts   []string
	isError bool
}

func (s *toolServer) call(ctx context.Context, name string, args any, meta obj) (callResult, error) {
	res, err := s.request(ctx, "tools/call", o("name", name, "arguments", args, "_meta", meta))
	if err != nil {
		return callResult{}, err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(res, &r)
	cr := callResult{raw: res, isError: r.IsError}
	for _, c := range r.Content {
		if c.Type == "text" {
			cr.texts = append(cr.texts, c.Text)
		}
	}
	return cr, nil
}

// stop closes stdin and sends SIGTERM, like Codex at exit.
func (s *toolServer) stop() {
	_ = s.stdin.Close()
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
}
