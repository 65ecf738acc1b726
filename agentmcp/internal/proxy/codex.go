package proxy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// codexArgNames are the arguments of the codex tool. The proxy-only ones
// (identity, agent_file, agent_id, role, tag, auto_mail) are never
// forwarded: Codex 0.153.4 rejects unknown arguments.
var codexArgNames = []string{"prompt", "agent_file", "agent_id", "identity", "role", "tag", "auto_mail", "cwd",
	"model", "approval-policy", "sandbox", "base-instructions", "developer-instructions", "compact-prompt", "profile", "config",
	"background", "thread_id"}

// defaultContinuation is the prompt of a resume without one.
const defaultContinuation = "Continue where you left off."

// toolCodex starts a session (FR-2, FR-3, FR-16) or resumes one by agent_id.
func (s *Server) toolCodex(ctx context.Context, c *toolCall) (*toolResult, error) {
	a := c.args
	if err := a.checkUnknown("codex", codexArgNames...); err != nil {
		return nil, err
	}
	str := map[string]string{}
	for _, n := range []string{"prompt", "agent_file", "agent_id", "identity", "role", "tag", "cwd", "model",
		"approval-policy", "sandbox", "base-instructions", "developer-instructions", "compact-prompt", "profile", "thread_id"} {
		v, err := a.str(n)
		if err != nil {
			return nil, err
		}
		str[n] = v
	}
	config, err := a.object("config")
	if err != nil {
		return nil, err
	}
	autoMail, autoMailSet, err := a.boolean("auto_mail")
	if err != nil {
		return nil, err
	}
	background, _, err := a.boolean("background")
	if err != nil {
		return nil, err
	}
	prompt, agentFile, agentID, adopt := str["prompt"], str["agent_file"], str["agent_id"], str["thread_id"]
	if agentID != "" {
		if agentFile != "" || adopt != "" {
			return nil, newError(ErrInvalidSessionParams, map[string]any{"arguments": []string{"agent_id", "agent_file", "thread_id"}},
				"agent_id (resume) excludes agent_file and thread_id")
		}
		return s.resumeByAgentID(ctx, c, agentID, prompt, str["cwd"], background)
	}
	var adoptNote string
	if adopt != "" {
		if agentFile != "" {
			return nil, newError(ErrInvalidSessionParams, map[string]any{"arguments": []string{"thread_id", "agent_file"}},
				"thread_id (adopt) and agent_file are mutually exclusive")
		}
		if other := s.sessionByThread(adopt); other != nil && other.snapshot().Status.Live() {
			return nil, newError(ErrInvalidSessionParams, map[string]any{"thread_id": adopt, "agent_id": other.agentID()},
				"Codex session %s is already bound to agent_id %s; continue it with codex-reply", adopt, other.agentID())
		}
		r, note, err := s.adoptNote(adopt)
		if err != nil {
			return nil, err
		}
		adoptNote = note
		if str["cwd"] == "" && r.Cwd != "" {
			if st, err := os.Stat(r.Cwd); err == nil && st.IsDir() {
				str["cwd"] = r.Cwd
			}
		}
		if strings.TrimSpace(prompt) == "" {
			prompt = defaultContinuation
		}
	}
	if prompt != "" && agentFile != "" {
		return nil, newError(ErrInvalidSessionParams, map[string]any{"arguments": []string{"prompt", "agent_file"}},
			"prompt and agent_file are mutually exclusive: give exactly one")
	}
	if strings.TrimSpace(prompt) == "" && agentFile == "" {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "prompt"},
			"argument \"prompt\" is required (or agent_file, or agent_id to resume)")
	}
	cwd, err := s.resolveCwd(str["cwd"])
	if err != nil {
		return nil, err
	}
	if agentFile != "" {
		path := agentFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, newError(ErrAgentFileNotFound, map[string]any{"agent_file": agentFile, "path": path},
				"agent_file %q cannot be read: %v", agentFile, errors.Unwrap(err))
		}
		if strings.TrimSpace(string(b)) == "" {
			return nil, newError(ErrAgentFileNotFound, map[string]any{"agent_file": agentFile, "path": path},
				"agent_file %q is empty", agentFile)
		}
		prompt = string(b)
		agentFile = path
	}
	identity := str["identity"]
	if identity == "" {
		identity = s.opts.DefaultIdentity
	}
	if err := atmclient.ValidateName("identity", identity); err != nil {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "identity"}, "%v", err)
	}
	settings, err := s.settings(str["role"])
	if err != nil {
		return nil, err
	}
	for _, o := range []struct{ arg, val string }{
		{"model", str["model"]}, {"approval-policy", str["approval-policy"]}, {"sandbox", str["sandbox"]},
	} {
		if o.val == "" {
			continue
		}
		switch o.arg {
		case "model":
			settings.Model = o.val
		case "approval-policy":
			settings.ApprovalPolicy = o.val
		case "sandbox":
			settings.Sandbox = o.val
		}
	}
	settings.BaseInstructions = firstNonEmpty(str["base-instructions"], s.opts.BaseInstructions)
	settings.DeveloperInstructions = str["developer-instructions"]
	settings.CompactPrompt = str["compact-prompt"]
	settings.Profile = str["profile"]
	settings.Config = config

	var autoMailArg *bool
	if autoMailSet {
		autoMailArg = &autoMail
	}
	sess, err := s.createSession(identity, cwd, str["tag"], str["role"], agentFile, settings, autoMailArg)
	if err != nil {
		return nil, err
	}
	if adopt != "" {
		sess.mu.Lock()
		sess.rec.BackendID = adopt
		if s.backend.Kind() == codexchild.KindMCPServer {
			sess.resumeNote = adoptNote // a fresh thread seeded with the rollout's last messages
		}
		sess.mu.Unlock()
		s.persistNow(sess)
		s.auditSession("session_adopted", sess.snapshot(), "codex thread "+adopt)
	}
	run := func(ctx context.Context) (*toolResult, error) {
		return s.turn(ctx, sess, turnInput{prompt: prompt, call: c, source: sourceClaude})
	}
	if background {
		return s.runBackground(sess, sourceClaude, run)
	}
	return s.runQueued(ctx, sess, sourceClaude, run)
}

// settings returns the thread defaults after the role preset.
func (s *Server) settings(role string) (threadSettings, error) {
	d := s.opts.Defaults
	if role != "" {
		r, ok := s.opts.Roles[role]
		if !ok {
			names := make([]string, 0, len(s.opts.Roles))
			for n := range s.opts.Roles {
				names = append(names, n)
			}
			sort.Strings(names)
			return threadSettings{}, newError(ErrInvalidSessionParams, map[string]any{"role": role, "roles": names},
				"unknown role %q (configured roles: %s)", role, strings.Join(names, ", "))
		}
		d.Model = firstNonEmpty(r.Model, d.Model)
		d.ReasoningEffort = firstNonEmpty(r.ReasoningEffort, d.ReasoningEffort)
		d.Sandbox = firstNonEmpty(r.Sandbox, d.Sandbox)
		d.ApprovalPolicy = firstNonEmpty(r.ApprovalPolicy, d.ApprovalPolicy)
	}
	return threadSettings{Model: d.Model, ReasoningEffort: d.ReasoningEffort, Sandbox: d.Sandbox, ApprovalPolicy: d.ApprovalPolicy}, nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// resolveCwd applies FR-2.4: the caller's cwd, else the repository root of
// the proxy's directory, else the proxy's directory. A given cwd must be an
// existing directory.
func (s *Server) resolveCwd(arg string) (string, error) {
	if arg == "" {
		if f := gitFacts(s.ctx, s.opts.Cwd); f.Root != nil {
			return *f.Root, nil
		}
		return s.opts.Cwd, nil
	}
	p := arg
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.opts.Cwd, p)
	}
	p = filepath.Clean(p)
	st, err := os.Stat(p)
	if err != nil || !st.IsDir() {
		return "", newError(ErrInvalidParams, map[string]any{"argument": "cwd", "cwd": arg}, "cwd %q is not an existing directory", arg)
	}
	return p, nil
}

// createSession binds identity to a new session: in-process uniqueness,
// the session limit, then the cross-process claim through the registry.
func (s *Server) createSession(identity, cwd, tag, role, agentFile string, settings threadSettings, autoMail *bool) (*session, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.isClosing() {
		return nil, newError(ErrInvalidSessionParams, nil, "the proxy is shutting down")
	}
	if other := s.byIdentity[identity]; other != nil {
		id := other.agentID()
		return nil, newError(ErrIdentityConflict, map[string]any{"identity": identity, "conflicting_agent_id": id},
			"identity conflict: %q is already bound to agent_id %q", identity, id)
	}
	if n := len(s.byIdentity); n >= s.opts.MaxSessions {
		return nil, newError(ErrMaxSessionsExceeded, map[string]any{"max_concurrent_threads": s.opts.MaxSessions, "active": n},
			"max_concurrent_threads (%d) reached: close a session with agent_close first", s.opts.MaxSessions)
	}
	facts := gitFacts(s.ctx, cwd)
	rec, err := s.reg.Add(registry.Session{
		Identity: identity, Cwd: cwd, RepoRoot: deref(facts.Root), RepoName: deref(facts.Name), Branch: deref(facts.Branch),
		Status: registry.StatusBusy, ThreadState: registry.ThreadBusy, Tag: tag, Role: role, AgentSource: agentFile,
	})
	if err != nil {
		return nil, s.claimError(identity, err)
	}
	sess := s.newSession(rec)
	sess.params = settings
	sess.autoMail = s.autoMailFor(identity)
	if autoMail != nil {
		sess.autoMail = *autoMail
	}
	s.sessions[rec.AgentID] = sess
	s.byIdentity[identity] = sess
	s.bindMail(sess)
	s.log.Info("session started", "agent_id", rec.AgentID, "identity", identity, "cwd", cwd)
	return sess, nil
}

// claimError turns a registry claim failure into IDENTITY_CONFLICT.
func (s *Server) claimError(identity string, err error) error {
	var ce *registry.ConflictError
	if errors.As(err, &ce) {
		data := map[string]any{"identity": identity, "holder_pid": ce.HolderPID}
		if ce.HolderAgentID != "" {
			data["conflicting_agent_id"] = ce.HolderAgentID
		}
		return newError(ErrIdentityConflict, data, "identity conflict: %q is held by another process (pid %d%s)",
			identity, ce.HolderPID, ifNotEmpty(", agent_id ", ce.HolderAgentID))
	}
	return newError(ErrInternal, nil, "%v", err)
}

func ifNotEmpty(prefix, v string) string {
	if v == "" {
		return ""
	}
	return prefix + v
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// autoMailFor is the configured auto-mail switch for an identity.
func (s *Server) autoMailFor(identity string) bool {
	if s.opts.AutoMailFor != nil {
		return s.opts.AutoMailFor(identity)
	}
	return s.opts.AutoMail
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// runQueued queues a turn on the session and waits for its result. If the
// client cancels while the turn waits in the queue, the turn is skipped; if
// it is running, the turn is interrupted.
func (s *Server) runQueued(ctx context.Context, sess *session, src turnSource, fn func(context.Context) (*toolResult, error)) (*toolResult, error) {
	type outcome struct {
		res *toolResult
		err error
	}
	ch := make(chan outcome, 1)
	s.enqueue(ctx, sess, src, fn, func(res *toolResult, err error) { ch <- outcome{res, err} }, nil)
	o := <-ch
	return o.res, o.err
}

// enqueue queues a turn on the session at once, without blocking, and
// calls done exactly once with its outcome: on the session's goroutine
// once the session has moved on, or at once when the session is closed.
// Calling enqueue from the router keeps a client's requests to one session
// in the order they were read; answering from the session's goroutine
// spares the turn a hand-off to another goroutine on its way back. With
// early (optional, given to fn's turn), done may be called on the Codex
// reader instead, once the session has moved on (answerEarly).
func (s *Server) enqueue(ctx context.Context, sess *session, src turnSource, fn func(context.Context) (*toolResult, error), done func(*toolResult, error), early *earlyAnswer) {
	j := &job{
		early:  early,
		source: src,
		run: func(jobCtx context.Context) func() {
			if err := ctx.Err(); err != nil {
				return func() { done(nil, err) }
			}
			runCtx, cancel := context.WithCancel(jobCtx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			if early != nil {
				early.stopCancel = stop
			}
			res, err := fn(runCtx)
			if err != nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			return func() { done(res, err) }
		},
		discard: func(err error) { done(nil, err) },
	}
	if early != nil {
		early.ctx, early.j, early.done = ctx, j, done
		j.router = early.call.router
	}
	if err := sess.submit(j); err != nil {
		done(nil, err)
	}
}

// turnInput is one turn to run on a session.
type turnInput struct {
	prompt string
	call   *toolCall // nil for turns the proxy starts (mail, summaries)
	source turnSource
	// sameThread continues the session's thread even after an interrupt
	// (the summary of an interrupted turn must come from that thread).
	sameThread bool
	// timeout overrides the request timeout. optional.
	timeout time.Duration
	// onSent is called once the turn's request is written to the child
	// (the mail layer's delivery acknowledgement, FR-8.12). optional.
	onSent func()
	// early lets the turn be answered from the Codex reader. optional.
	early *earlyAnswer
}

// turn runs one Codex turn for the session: refreshed context, a new or
// continued thread, events and approvals bridged, the result recorded.
func (s *Server) turn(ctx context.Context, sess *session, in turnInput) (*toolResult, error) {
	// On the router's goroutine (see router) the turn hands the router on
	// before anything that may wait.
	rt := routerOf(ctx)
	sess.mu.Lock()
	rec := sess.rec
	settings := sess.params
	note := sess.resumeNote
	sess.resumeNote = ""
	tainted := sess.tainted
	sess.mu.Unlock()

	facts, ok := cachedGitFacts(rec.Cwd)
	if !ok {
		rt.handOff() // files to read
		facts = gitFacts(ctx, rec.Cwd)
	}
	sess.mu.Lock()
	sess.rec.RepoRoot, sess.rec.RepoName, sess.rec.Branch = deref(facts.Root), deref(facts.Name), deref(facts.Branch)
	s.persistAsync(sess)
	sess.mu.Unlock()

	sc := sessionContext{AgentID: rec.AgentID, Identity: rec.Identity, Team: s.opts.Team, Cwd: rec.Cwd, Repo: facts,
		Tools: len(s.opts.ToolServer) > 0, Extra: s.opts.ExtraInstructions}
	s.smu.Lock()
	known := rec.BackendID != "" && s.knownThreads[rec.BackendID]
	s.smu.Unlock()
	if !known {
		// Not the common case, no need to hurry: a thread this child has
		// not run (the backend's Kind may even probe the binary first).
		rt.handOff()
	}
	kind := s.backend.Kind()
	newThread := rec.BackendID == "" || (kind == codexchild.KindMCPServer && (!known || tainted && !in.sameThread))
	if newThread {
		rt.handOff()
	}
	if newThread && tainted && note == "" {
		sess.mu.Lock()
		note = interruptedNote(rec, sess.act.messages)
		sess.mu.Unlock()
	}

	timeout := s.opts.RequestTimeout
	if in.timeout > 0 {
		timeout = in.timeout
	}
	req := codexchild.TurnRequest{
		Timeout: timeout,
		Handler: &turnHandler{s: s, sess: sess, call: in.call},
	}
	if rt != nil {
		req.Yield = rt.handOff
	}
	if newThread || kind != codexchild.KindMCPServer {
		// codex-reply takes a prompt and nothing else: a thread's
		// parameters are built only where they go (a new thread; resume
		// and turns on app-server).
		req.Params = s.threadParams(rec, settings, sc.render(), note)
	}
	if newThread {
		req.Prompt = in.prompt
		if rec.BackendID != "" {
			s.log.Info("continuing the session on a new Codex thread", "agent_id", rec.AgentID, "old_thread", rec.BackendID,
				"reason", map[bool]string{true: "thread was interrupted", false: "thread unknown to this child"}[tainted])
		}
	} else {
		req.ThreadID = rec.BackendID
		req.Resume = !known
		var b strings.Builder
		b.WriteString(sess.contextBlock(sc))
		b.WriteString("\n")
		if note != "" {
			b.WriteString(note)
			b.WriteString("\n\n")
		}
		b.WriteString(in.prompt)
		req.Prompt = b.String()
	}
	// The turn is audited once it is on its way to Codex, while Codex
	// works on it; a turn that never reached Codex is audited with why.
	var sent bool
	req.OnSent = func() {
		sent = true
		s.auditTurn(rec, in, "forwarded")
		if in.onSent != nil {
			in.onSent()
		}
	}
	if e := in.early; e != nil && !newThread {
		req.OnResult = func(r *codexchild.Result) { s.answerEarly(e, sess, kind, in, r) }
	}
	res, err := s.backend.Turn(ctx, req)
	rt.handOff() // done by the backend's Yield already; what follows may wait on files
	if in.early != nil && in.early.answered.Load() {
		return nil, nil // recorded and answered on the Codex reader (answerEarly)
	}
	if err != nil && !sent {
		s.auditTurn(rec, in, "not forwarded: "+err.Error())
	}
	if err != nil && res != nil && errors.Is(err, context.Canceled) {
		err = nil // interrupted (agent_interrupt, close): report the interrupted result
	}
	if err != nil {
		err = s.turnError(sess, err)
		if in.source != sourceSummary {
			sess.recordOutcome(&turnOutcome{status: "error", err: err, finished: s.now()}, "")
		}
		return nil, err
	}
	text := s.capResult(rec.AgentID, res.Text)
	return turnResult(s.recordTurn(sess, kind, newThread, in, res, text), res, text), nil
}

// recordTurn records a turn's result in the session (its thread id, the
// taint of an interrupted thread, the count, the outcome agent_status
// reports) and returns the session's record. text is the result's text as
// capped for the answer.
func (s *Server) recordTurn(sess *session, kind codexchild.Kind, newThread bool, in turnInput, res *codexchild.Result, text string) registry.Session {
	sess.mu.Lock()
	newID := res.ThreadID != "" && res.ThreadID != sess.rec.BackendID
	if res.ThreadID != "" {
		sess.rec.BackendID = res.ThreadID
	}
	if kind == codexchild.KindMCPServer && res.Status == "interrupted" {
		sess.tainted = true
	} else if newThread {
		sess.tainted = false
	}
	sess.turns++
	sess.lastResult = res.Text
	rec := sess.rec
	sess.mu.Unlock()
	if newID {
		s.persistNow(sess) // resume depends on it: not left to the persister
	} else {
		s.persistAsync(sess)
	}
	if res.ThreadID != "" {
		s.smu.Lock()
		s.knownThreads[res.ThreadID] = true
		s.smu.Unlock()
	}
	if in.source != sourceSummary {
		sess.recordOutcome(&turnOutcome{status: firstNonEmpty(res.Status, "completed"), text: text, isError: res.IsError,
			threadID: rec.BackendID, finished: s.now()}, res.Text)
	}
	return rec
}

// turnResult is the answer to a turn: the (capped) text, and in
// structuredContent the session's ids with the text and the status.
func turnResult(rec registry.Session, res *codexchild.Result, text string) *toolResult {
	return &toolResult{
		Text:    text,
		IsError: res.IsError,
		Structured: map[string]any{
			"agent_id": rec.AgentID, "threadId": rec.BackendID, "identity": rec.Identity,
			"content": text, "status": firstNonEmpty(res.Status, "completed"),
		},
	}
}

// threadParams builds the Codex parameters of a thread: settings, the
// injected context appended to the caller's developer instructions (FR-2.2),
// the resume note before it (FR-6.1), the per-thread ATM tool server.
func (s *Server) threadParams(rec registry.Session, st threadSettings, injected, note string) codexchild.ThreadParams {
	dev := appendInstructions(st.DeveloperInstructions, injected)
	if note != "" {
		dev = note + "\n\n" + dev
	}
	cfg := map[string]any{}
	for k, v := range s.opts.CodexConfig {
		cfg[k] = v
	}
	for k, v := range st.Config {
		cfg[k] = v
	}
	if st.ReasoningEffort != "" {
		cfg["model_reasoning_effort"] = st.ReasoningEffort
	}
	if len(s.opts.ToolServer) > 0 {
		env := map[string]any{"ATM_HOME": s.opts.Home}
		for k, v := range s.opts.ToolServerEnv {
			env[k] = v
		}
		servers := map[string]any{}
		if existing, ok := cfg["mcp_servers"].(map[string]any); ok {
			for k, v := range existing {
				servers[k] = v
			}
		}
		servers["atm"] = map[string]any{
			"command":                     s.opts.ToolServer[0],
			"args":                        append(append([]string{}, s.opts.ToolServer[1:]...), "--team", s.opts.Team, "--identity", rec.Identity),
			"env":                         env,
			"default_tools_approval_mode": "approve",
			"required":                    true,
		}
		cfg["mcp_servers"] = servers
	}
	if len(cfg) == 0 {
		cfg = nil
	}
	return codexchild.ThreadParams{
		Cwd: rec.Cwd, Model: st.Model, ApprovalPolicy: st.ApprovalPolicy, Sandbox: st.Sandbox,
		BaseInstructions: st.BaseInstructions, DeveloperInstructions: dev, CompactPrompt: st.CompactPrompt,
		Profile: st.Profile, Config: cfg,
	}
}

// turnError maps a backend failure to the proxy's errors (FR-11, FR-14).
func (s *Server) turnError(sess *session, err error) error {
	var te *codexchild.TimeoutError
	var ee *codexchild.ExitError
	switch {
	case errors.As(err, &te):
		rec := sess.snapshot()
		return newError(ErrRequestTimeout, map[string]any{"agent_id": rec.AgentID, "threadId": firstNonEmpty(te.ThreadID, rec.BackendID),
			"timeout_secs": te.After.Seconds(), "partial": te.Partial},
			"codex turn timed out after %s (agent_id %s)", te.After, rec.AgentID)
	case errors.As(err, &ee):
		return s.childDead(ee)
	case errors.Is(err, context.Canceled):
		return err
	}
	return newError(ErrInternal, nil, "codex: %v", err)
}

// childDead is CHILD_PROCESS_DEAD with how the child died (FR-11.2).
func (s *Server) childDead(ee *codexchild.ExitError) error {
	data := map[string]any{"exit_code": ee.Status.Code}
	if ee.Status.Signal != "" {
		data["signal"] = ee.Status.Signal
	}
	if ee.Stderr != "" {
		data["stderr"] = ee.Stderr
	}
	return newError(ErrChildProcessDead, data, "codex child process is not running: %s (restart the MCP server to start a new one)", ee.Status)
}

// backendError maps errors of Forward and friends.
func (s *Server) backendError(err error) error {
	var ee *codexchild.ExitError
	if errors.As(err, &ee) {
		return s.childDead(ee)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return newError(ErrRequestTimeout, nil, "codex did not answer in time")
	}
	return newError(ErrInternal, nil, "codex: %v", err)
}
