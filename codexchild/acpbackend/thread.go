package acpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// errACPTurnTimeout is the cause of a turn's context when its timeout ran
// out.
var errACPTurnTimeout = errors.New("acp turn timeout")

// syncWait bounds the wait for a turn's events to reach its handler.
const syncWait = 5 * time.Second

// acpThread is one thread: an agent process and its one ACP session.
type acpThread struct {
	b *Backend

	// Guarded by b.mu:
	id     string // the session id; "" until a new thread's session opened
	busy   bool   // a Turn holds the thread
	opened bool   // a session was opened once: the thread stays known

	// Guarded by mu (taken after b.mu, never before):
	mu       sync.Mutex
	client   *acp.Client
	sess     *acp.Session
	cwd      string
	turn     *acpTurn      // the running turn, or nil
	stopping chan struct{} // closed when the agent stopped after a turn has been closed
	notes    []string      // denial notes for the next prompt (denialnote.go)
	usage    backend.Usage // the thread's usage so far (usage.go)
	model    string        // the model its session runs, as the agent said (acp.Session.Model)
}

// takeNotes returns the thread's denial notes, each followed by a blank
// line, and forgets them.
func (th *acpThread) takeNotes() string {
	th.mu.Lock()
	notes := th.notes
	th.notes = nil
	th.mu.Unlock()
	if len(notes) == 0 {
		return ""
	}
	return strings.Join(notes, "\n\n") + "\n\n"
}

// liveClient returns the thread's agent when it runs.
func (th *acpThread) liveClient() *acp.Client {
	th.mu.Lock()
	c := th.client
	th.mu.Unlock()
	if c == nil || c.Status().State == acp.StateDead {
		return nil
	}
	return c
}

// takeClient detaches the thread's agent (to be closed by the caller).
func (th *acpThread) takeClient() *acp.Client {
	th.mu.Lock()
	defer th.mu.Unlock()
	c := th.client
	th.client, th.sess = nil, nil
	return c
}

// retire stops the thread's agent in the background; the next turn waits
// for that and reopens the session in a new process.
func (th *acpThread) retire(why string) {
	c := th.takeClient()
	if c == nil {
		return
	}
	done := make(chan struct{})
	th.mu.Lock()
	th.stopping = done
	th.mu.Unlock()
	b := th.b
	b.log.Info("acp: stopping the agent", "why", why, "pid", c.Status().PID)
	stop := func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Close(ctx)
		b.noteExit(c.Status().Exit)
	}
	// Close waits for b.stopping once closed is set: a stop that begins
	// after that runs here.
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		stop()
		return
	}
	b.stopping.Go(stop)
	b.mu.Unlock()
}

// ready makes sure the thread has a live agent and session for the turn
// and returns the prompt text to send, and why the thread the turn asked
// for was replaced by a new session ("" when it was not).
func (th *acpThread) ready(ctx context.Context, req backend.TurnRequest) (text, replaced string, err error) {
	b := th.b
	th.mu.Lock()
	c, s, stopping := th.client, th.sess, th.stopping
	th.mu.Unlock()
	if c != nil && s != nil {
		if c.Status().State != acp.StateDead {
			return req.Preamble + req.Prompt, "", nil
		}
		th.takeClient()
		b.noteExit(c.Status().Exit)
		_ = c.Close(ctx) // reaps what is left of it
	}
	if stopping != nil {
		select {
		case <-stopping:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
	b.mu.Lock()
	id := th.id
	b.mu.Unlock()
	p, err := th.sessionParams(req.Params)
	if err != nil {
		return "", "", err
	}
	env := processEnv(req.Params.Env)
	c, err = th.start(ctx, env)
	if err != nil {
		return "", "", err
	}
	text = req.Preamble + req.Prompt
	s = nil
	if id != "" {
		replaced = "the resume policy is none"
		if b.cfg.resume() != ResumeNone {
			s, replaced = th.reopen(ctx, c, id, p, b.cfg.resume())
		}
		if s == nil && c.Status().State == acp.StateDead {
			_ = c.Close(ctx)
			if c, err = th.start(ctx, env); err != nil {
				return "", "", err
			}
		}
	}
	if s == nil {
		if s, err = c.NewSession(ctx, p); err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
			return "", "", th.sessionError("session/new", err)
		}
		seed := ""
		if id != "" {
			seed = req.Seed
			b.log.Info("acp: thread continues in a new session", "thread", id, "session", s.ID(), "reason", replaced)
		}
		text = firstPrompt(req.Params, seed, req.Prompt)
		if req.OnThread != nil {
			req.OnThread(s.ID())
		}
	} else {
		replaced = ""
	}
	if err := th.setModel(ctx, s, req.Params.Model); err != nil {
		_ = c.Close(context.WithoutCancel(ctx))
		return "", "", err
	}
	model := s.Model()
	th.mu.Lock()
	th.client, th.sess, th.cwd, th.stopping, th.model = c, s, p.Cwd, nil, model
	th.mu.Unlock()
	b.mu.Lock()
	th.opened = true
	b.mu.Unlock()
	if err := b.rekey(th, s.ID()); err != nil {
		th.takeClient()
		_ = c.Close(context.WithoutCancel(ctx))
		return "", "", err
	}
	return text, replaced, nil
}

// start starts the thread's agent, its environment the backend's with the
// thread's own (ThreadParams.Env) over it.
func (th *acpThread) start(ctx context.Context, env []string) (*acp.Client, error) {
	b := th.b
	cfg := b.cfg
	c, err := acp.Start(ctx, acp.Config{
		Command: cfg.Command, Name: cfg.Name, Args: cfg.Args, Env: append(slices.Clone(cfg.Env), env...), Dir: cfg.Dir, Guard: cfg.Guard,
		Asker:   acp.AskerFunc(th.ask),
		OnEvent: th.onEvent, OnIdle: th.onIdle,
		InitTimeout: cfg.InitTimeout, CallTimeout: cfg.CallTimeout, CancelTimeout: cfg.CancelTimeout, StopGrace: cfg.StopGrace,
		TurnTimeout: -1, // each turn's own deadline (run)
		Logger:      b.log,
	})
	if err != nil {
		var ee *acp.ExitError
		if errors.As(err, &ee) {
			if ee.Status.Code == 127 {
				nf := acpExitError(ee)
				nf.NotFound = &backend.NotFoundError{Bin: cfg.Command, Program: "command", Path: os.Getenv("PATH"), Detail: lastLine(ee.Stderr)}
				return nil, fmt.Errorf("%w: %w", backend.ErrHandshake, nf)
			}
			return nil, fmt.Errorf("%w: %w", backend.ErrHandshake, acpExitError(ee))
		}
		if childproc.ExecFailed(err) {
			return nil, &backend.NotFoundError{Bin: cfg.Command, Program: "command", Path: os.Getenv("PATH"), Detail: childproc.ExecDetail(err)}
		}
		return nil, fmt.Errorf("%w: %w", backend.ErrHandshake, err)
	}
	b.noteStarted(c)
	return c, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// reopen loads or resumes session id in c, as the agent offers; nil when
// it cannot, with why (Result.Replaced).
func (th *acpThread) reopen(ctx context.Context, c *acp.Client, id string, p acp.SessionParams, policy string) (*acp.Session, string) {
	log := th.b.log.With("thread", id)
	caps := c.Info().Capabilities
	var why []string
	if caps.LoadSession && policy != ResumeResume {
		s, err := c.LoadSession(ctx, id, p)
		if err == nil {
			log.Info("acp: session reopened with session/load", "replayed", len(s.Replayed()))
			return s, ""
		}
		log.Warn("acp: session/load failed", "err", err)
		why = append(why, "session/load failed: "+err.Error())
	}
	if caps.Resume && policy != ResumeLoad && c.Status().State != acp.StateDead {
		s, err := c.ResumeSession(ctx, id, p)
		if err == nil {
			log.Info("acp: session reopened with session/resume")
			return s, ""
		}
		log.Warn("acp: session/resume failed", "err", err)
		why = append(why, "session/resume failed: "+err.Error())
	}
	if len(why) == 0 {
		return nil, "the agent offers no way to reopen a session (neither session/load nor session/resume, as the resume policy allows)"
	}
	return nil, "the agent could not reopen it: " + strings.Join(why, "; ")
}

// sessionError converts a failure to open a session.
func (th *acpThread) sessionError(method string, err error) error {
	var ee *acp.ExitError
	if errors.As(err, &ee) {
		return acpExitError(ee)
	}
	return fmt.Errorf("acp agent %s: %s: %w", th.b.cfg.Command, method, err)
}

// setModel sets the session's model through its "model" config option,
// when there is a model and the agent offers the option.
func (th *acpThread) setModel(ctx context.Context, s *acp.Session, model string) error {
	if model == "" {
		return nil
	}
	var opts []struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(s.ConfigOptions(), &opts)
	if !slices.ContainsFunc(opts, func(o struct {
		ID string `json:"id"`
	}) bool {
		return o.ID == "model"
	}) {
		th.b.log.Debug("acp: the agent offers no model option; model ignored", "model", model)
		return nil
	}
	if err := s.SetConfigOption(ctx, "model", model); err != nil {
		return th.sessionError("session/set_config_option model", err)
	}
	return nil
}

// sessionParams are the session's cwd, MCP servers, mode and options.
func (th *acpThread) sessionParams(p backend.ThreadParams) (acp.SessionParams, error) {
	cfg := th.b.cfg
	cwd := p.Cwd
	if cwd == "" {
		cwd = cfg.Dir
	}
	if cwd == "" {
		cwd = "."
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return acp.SessionParams{}, fmt.Errorf("acp: session cwd: %w", err)
	}
	sp := acp.SessionParams{Cwd: abs, Mode: cfg.Mode, ConfigOptions: cfg.ConfigOptions}
	for _, ts := range p.ToolServers {
		if h := th.b.toolHTTP; h != nil {
			srv, err := h.server(ts)
			if err != nil {
				return acp.SessionParams{}, err
			}
			sp.MCPServers = append(sp.MCPServers, srv)
			continue
		}
		cmd := ts.Command
		if !filepath.IsAbs(cmd) {
			if lp, err := exec.LookPath(cmd); err == nil {
				if a, err := filepath.Abs(lp); err == nil {
					cmd = a
				}
			}
		}
		env := make([]acp.NameValue, 0, len(ts.Env))
		for k, v := range ts.Env {
			env = append(env, acp.NameValue{Name: k, Value: v})
		}
		sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
		sp.MCPServers = append(sp.MCPServers, acp.MCPServer{Name: ts.Name, Command: cmd, Args: ts.Args, Env: env})
	}
	return sp, nil
}

// firstPrompt is the first prompt of a session: the instructions (and the
// seed in front of the developer instructions), each followed by a blank
// line, then the prompt.
func firstPrompt(p backend.ThreadParams, seed, prompt string) string {
	var parts []string
	for _, s := range []string{p.BaseInstructions, seed, p.DeveloperInstructions} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(append(parts, prompt), "\n\n")
}

// run sends the turn's prompt and waits for its end.
func (th *acpThread) run(ctx context.Context, req backend.TurnRequest, text string) (*backend.Result, error) {
	b := th.b
	t := &acpTurn{handler: req.Handler, onAccepted: req.OnAccepted, kinds: make(map[string]string)}
	th.mu.Lock()
	c, s := th.client, th.sess
	th.turn = t
	t.deliver(backend.Event{ThreadID: s.ID(), Method: "session/prompt", Type: "turn_started", Neutral: &backend.Activity{Kind: backend.ActivityTurnStarted, Model: th.model}})
	th.mu.Unlock()

	timeout := b.cfg.turnTimeout(req.Timeout)
	tctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeoutCause(ctx, timeout, errACPTurnTimeout)
		defer cancel()
	}
	res, err := s.Prompt(tctx, acp.TurnRequest{Text: text, Timeout: -1, OnSent: req.OnSent})
	timedOut := ctx.Err() == nil && errors.Is(context.Cause(tctx), errACPTurnTimeout)

	sctx, cancel := context.WithTimeout(context.Background(), syncWait)
	if err := c.Sync(sctx); err != nil {
		b.log.Warn("acp: the turn's events did not all reach its handler", "thread", s.ID(), "err", err)
	}
	cancel()
	var rpcErr *jsonrpcframe.Error
	th.mu.Lock()
	if res != nil || errors.As(err, &rpcErr) {
		t.accept()
	}
	if res != nil {
		for _, m := range res.Messages {
			t.deliver(backend.Event{ThreadID: s.ID(), TurnID: turnID(res.Turn), Method: "session/prompt", Type: "agent_message",
				Neutral: &backend.Activity{Kind: backend.ActivityMessage, Text: m}})
		}
		if res.Tokens != nil {
			th.usage = withTurn(th.usage, res.Tokens)
			u := th.usage
			t.deliver(backend.Event{ThreadID: s.ID(), TurnID: turnID(res.Turn), Method: "session/prompt", Type: "usage",
				Neutral: &backend.Activity{Kind: backend.ActivityTokens, Usage: &u}})
		}
	}
	t.flush()
	th.turn = nil
	th.mu.Unlock()

	interrupted := timedOut || ctx.Err() != nil || t.interrupting || (res != nil && res.Cancelled)
	var ee *acp.ExitError
	if errors.As(err, &ee) {
		b.noteExit(&ee.Status)
		th.takeClient()
		_ = c.Close(context.WithoutCancel(ctx)) // dead: reaps it
		switch {
		case timedOut:
			return nil, &backend.TimeoutError{After: timeout, ThreadID: s.ID(), Partial: t.partial.String()}
		case ctx.Err() != nil:
			return &backend.Result{ThreadID: s.ID(), IsError: true, Status: "interrupted", Text: "interrupted", Partial: t.partial.String()}, ctx.Err()
		case t.interrupting && errors.Is(ee, acp.ErrCancelIgnored):
			// Killed because it did not stop after session/cancel.
			return &backend.Result{ThreadID: s.ID(), IsError: true, Status: "interrupted", Text: "interrupted", Partial: t.partial.String()}, nil
		}
		return nil, acpExitError(ee)
	}
	if interrupted && !b.cfg.ReuseAfterCancel {
		th.retire("the turn was interrupted")
	}
	if res == nil {
		if errors.As(err, &rpcErr) {
			return &backend.Result{ThreadID: s.ID(), IsError: true, Status: "failed", Text: err.Error()}, nil
		}
		return nil, err
	}
	r := result(s.ID(), res)
	switch {
	case timedOut:
		return nil, &backend.TimeoutError{After: timeout, ThreadID: s.ID(), Partial: r.Partial}
	case ctx.Err() != nil:
		return r, ctx.Err()
	}
	return r, nil
}

// result converts acp's TurnResult.
func result(sid string, res *acp.TurnResult) *backend.Result {
	r := &backend.Result{ThreadID: sid, TurnID: turnID(res.Turn), Text: res.Text, Raw: res.Raw}
	switch {
	case res.Cancelled || res.StopReason == acp.StopCancelled:
		r.Status, r.IsError = "interrupted", true
		r.Partial = strings.Join(res.Messages, "\n\n")
		if r.Text == "" {
			r.Text = "interrupted"
		}
	case res.StopReason == acp.StopEndTurn:
		r.Status = "completed"
	default:
		r.Status, r.IsError = "failed", true
		if r.Text == "" {
			r.Text = "the agent stopped: " + string(res.StopReason)
		}
	}
	return r
}

func turnID(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// interrupt cancels the thread's running turn.
func (th *acpThread) interrupt(ctx context.Context) error {
	th.mu.Lock()
	t, s := th.turn, th.sess
	if t == nil || s == nil {
		th.mu.Unlock()
		return nil
	}
	t.interrupting = true
	th.mu.Unlock()
	err := s.Interrupt(ctx)
	if errors.Is(err, acp.ErrCancelIgnored) {
		th.b.log.Warn("acp: the agent ignored session/cancel and was killed", "thread", s.ID())
		return nil
	}
	return err
}

// processEnv is a thread's Env as NAME=value entries, sorted: the thread's agent
// process gets them.
func processEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
