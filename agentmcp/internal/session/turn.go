package session

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// ErrAnswered reports a turn whose result went to the client from the
// backend's reader already (CallRef.TryReplyNow): nothing more is to be
// sent.
var ErrAnswered = errors.New("session: turn answered from the backend's reader")

// ThreadSettings are the settings a session was started with, reused
// whenever a thread has to be started again, named as the tools'
// arguments: the neutral ones (model, instructions) every kind takes, and
// those only some kinds take of their own (values), which the session's
// backend turns into its thread Options (backend.Configurable).
type ThreadSettings struct {
	Model                 string
	ReasoningEffort       string
	Sandbox               string
	ApprovalPolicy        string
	BaseInstructions      string
	DeveloperInstructions string
	CompactPrompt         string
	Profile               string
	Config                map[string]any
}

// values are st's settings that only some kinds take, by their arguments'
// names (backend.Configurable.Settings names them so): strings, and config
// a map. Which kind takes which is the kinds' backends' to say.
func (st ThreadSettings) values() map[string]any {
	return map[string]any{"approval-policy": st.ApprovalPolicy, "compact-prompt": st.CompactPrompt, "config": st.Config,
		"profile": st.Profile, "reasoning-effort": st.ReasoningEffort, "sandbox": st.Sandbox}
}

// set reports whether a setting's value (as values has it) is given: a
// non-empty string or map.
func set(v any) bool {
	switch v := v.(type) {
	case string:
		return v != ""
	case map[string]any:
		return len(v) > 0
	}
	return v != nil
}

// turnCache keeps what a session's turns send that changes rarely: the
// <session-context> block and the thread parameters, rebuilt only when
// something they are made of changed.
type turnCache struct {
	key     [10]string
	gen     int
	block   string
	preface string // block and a newline: the preamble
	params  backend.ThreadParams
}

// turnContext returns the preamble of a turn that continues a thread and
// the thread's parameters for sc and the session's settings, from the
// cache when nothing changed.
func (s *Session) turnContext(sc sessionContext, b Backend) (preamble string, params backend.ThreadParams) {
	key := sc.key()
	s.mu.Lock()
	c := s.cache
	settings, gen, kind := s.params, s.paramsGen, s.rec.Kind()
	s.mu.Unlock()
	if c.block == "" || c.key != key || c.gen != gen {
		block := sc.contextBlock()
		c = turnCache{key: key, gen: gen, block: block, preface: block + "\n",
			params: threadParams(&s.m.cfg, sc, settings, kind, b)}
		s.mu.Lock()
		s.cache = c
		s.mu.Unlock()
	}
	return c.preface, c.params
}

// turn runs one turn for the session on its kind's backend: refreshed
// context, events and approvals bridged, the result recorded. With
// replyNow set and a client call, the result may be answered from the
// backend's reader (replyFromReader).
func (s *Session) turn(ctx context.Context, j *job, t Turn, replyNow bool) (*TurnResult, error) {
	m := s.m
	release := func() {
		if t.Call != nil {
			t.Call.Release()
		}
	}
	if err := s.holdBudget(t); err != nil {
		return nil, err // queued before its budget was used up (budget.go)
	}
	if t.Source != SourceSummary {
		m.resumed.used(s) // a resumed session is used now: its close is a real one
	}
	s.mu.Lock()
	rec, place := s.rec, s.place
	seed, seedWhat := s.seed, s.seedWhat
	s.seed, s.seedWhat = "", ""
	var told string // a fork's history, told to its first thread (fork.go)
	if rec.BackendID == "" && t.Source != SourceSummary {
		told, s.told = s.told, ""
	}
	resumed := s.resumed
	if t.Source != SourceSummary {
		s.resumed = nil
	}
	s.mu.Unlock()

	facts, ok := m.cfg.Git.Cached(rec.Cwd)
	if rec.Host != "" {
		facts = recordFacts(rec) // read there after the last turn (hosts.go)
	} else if !ok {
		release() // files to read
		facts = m.cfg.Git.Facts(ctx, rec.Cwd)
	}
	s.mu.Lock()
	s.rec.RepoRoot, s.rec.RepoName, s.rec.Branch = deref(facts.Root), deref(facts.Name), deref(facts.Branch)
	s.mu.Unlock()
	m.persist.async(s)

	b, berr := m.cat.of(rec) // the session's kind (agents.go)
	sc := sessionContext{AgentID: rec.AgentID, Identity: rec.Identity, Team: m.cfg.Team, Cwd: rec.Cwd, Repo: facts, Host: rec.Host,
		Tools: len(m.cfg.ToolServer) > 0, Extra: m.cfg.ExtraInstructions, Place: place}
	preamble, params := s.turnContext(sc, b)
	if rec.BackendID == "" {
		release() // a new thread: not the common case, no need to hurry
	}
	timeout := m.cfg.RequestTimeout
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	outSchema, prompt, how := outputRequest(ctx, b, t.Output, told+t.Prompt) // output.go
	req := backend.TurnRequest{
		ThreadID: rec.BackendID, Prompt: prompt, Preamble: preamble, Params: params, Seed: seed, OutputSchema: outSchema,
		SameThread: t.SameThread, Timeout: timeout, Release: release, OnAccepted: t.OnAccepted,
		OnThread: s.newThread,
		Handler:  &turnHandler{m: m, s: s, call: t.Call, asker: t.Asker},
	}
	// The turn is audited once it is on its way to the agent, while the
	// agent works on it; a turn that never reached it is audited with why.
	var sent bool
	req.OnSent = func() {
		sent = true
		m.cfg.Audit.Turn(rec, t.Source, t.Prompt, "forwarded")
		if t.OnSent != nil {
			t.OnSent()
		}
	}
	if seed == "" {
		seedWhat = ""
	}
	note := func(r *backend.Result) *ThreadNote { return threadNote(resumed, rec.BackendID, r, seedWhat) }
	if replyNow && t.Call != nil && rec.BackendID != "" {
		req.OnResult = func(r *backend.Result) { s.replyFromReader(j, t, how, r, note(r)) }
	}
	err := berr
	var res *backend.Result
	if err == nil {
		res, err = b.Turn(ctx, req)
	}
	release()
	if j != nil && j.answered.Load() {
		return nil, ErrAnswered // recorded and answered on the backend's reader
	}
	if err != nil && !sent {
		m.cfg.Audit.Turn(rec, t.Source, t.Prompt, "not forwarded: "+err.Error())
	}
	if err != nil && res != nil && errors.Is(err, context.Canceled) {
		err = nil // interrupted (agent_interrupt, close): report the interrupted result
	}
	if err != nil {
		err = turnError(s.Record(), b, err)
		err = s.withProblem(err)
		if t.Source != SourceSummary {
			s.recordOutcome(&outcome{status: "error", err: err, finished: m.now()}, "")
		}
		return nil, err
	}
	res, ans := structured(t, how, res) // checked against its output schema (output.go)
	text := capResult(m.cfg.MaxResultChars, rec.AgentID, res.Text)
	n := note(res)
	if n != nil && !n.Continued {
		m.log.Warn("the turn did not continue the session's thread", "agent_id", rec.AgentID, "previous_thread", n.PreviousThreadID,
			"thread", res.ThreadID, "reason", n.Reason, "given", firstNonEmpty(n.Given, "nothing"))
	}
	rec = s.recordTurn(t.Source, res, text, n, ans)
	r := turnResult(rec, res, text, n, place, ans)
	r.NotSteered = t.NotSteered
	return r, nil
}

// newThread records the thread a turn runs on as soon as the backend names
// it (backend.TurnRequest.OnThread), long before a slow first turn
// ends: a proxy killed during that turn leaves the thread to resume. It
// may run on the backend's reader and does not wait for the write.
func (s *Session) newThread(threadID string) {
	s.mu.Lock()
	changed := threadID != "" && threadID != s.rec.BackendID
	if changed {
		s.rec.BackendID = threadID
	}
	s.mu.Unlock()
	if changed {
		s.m.persist.soon(s)
	}
}

// replyFromReader runs on the backend's reader with the turn's result: it answers
// the client at once when that costs no waiting (the thread id is the
// session's already, so nothing has to be persisted first), recording the
// turn and moving the session on just before the answer is written.
func (s *Session) replyFromReader(j *job, t Turn, how string, res *backend.Result, n *ThreadNote) {
	s.mu.Lock()
	rec, saved, place := s.rec, s.savedThread, s.place
	s.mu.Unlock()
	if res.ThreadID != "" && res.ThreadID != saved {
		return // a thread the registry does not have yet: written first
	}
	res, ans := structured(t, how, res)
	text := capResult(s.m.cfg.MaxResultChars, rec.AgentID, res.Text)
	r := turnResult(rec, res, text, n, place, ans)
	r.NotSteered = t.NotSteered
	t.Call.TryReplyNow(r, func() {
		s.recordTurn(t.Source, res, text, n, ans)
		j.idle = s.finish(j)
		if j.stopCancel != nil {
			j.stopCancel()
		}
		j.answered.Store(true)
	})
}

// recordTurn records a turn's result in the session (its thread id, the
// count, the outcome agent_status reports) and returns the session's
// record. text is the result's text as capped for the answer.
func (s *Session) recordTurn(src Source, res *backend.Result, text string, n *ThreadNote, ans answer) registry.Session {
	s.mu.Lock()
	newID := res.ThreadID != "" && res.ThreadID != s.savedThread
	if res.ThreadID != "" {
		s.rec.BackendID = res.ThreadID
	}
	s.rec.Turns++
	if src != SourceSummary {
		s.rec.LastResult = Clip(res.Text, registry.MaxLastResult)
	}
	rec := s.rec
	s.mu.Unlock()
	if newID {
		s.m.persist.now(s) // resume depends on it: not left for later
	} else {
		s.m.persist.async(s)
	}
	if src != SourceSummary {
		s.recordOutcome(&outcome{status: firstNonEmpty(res.Status, "completed"), text: text, isError: res.IsError,
			threadID: rec.BackendID, thread: n, finished: s.m.now(), subAgents: res.SubAgents, subAgentsNote: res.SubAgentsNote,
			output: ans.output, outputError: ans.outputError, outputHow: ans.how}, res.Text)
	}
	return rec
}

// turnResult is a turn's result; place is the session's place the turn ran
// in (nil for none), copied.
func turnResult(rec registry.Session, res *backend.Result, text string, n *ThreadNote, place *Place, ans answer) *TurnResult {
	if place != nil {
		c := *place
		place = &c
	}
	return &TurnResult{AgentID: rec.AgentID, ThreadID: rec.BackendID, Identity: rec.Identity, Text: text,
		Status: firstNonEmpty(res.Status, "completed"), IsError: res.IsError, Thread: n, Place: place,
		SubAgents: res.SubAgents, SubAgentsNote: res.SubAgentsNote, Output: ans.output, OutputError: ans.outputError, OutputHow: ans.how}
}

// The environment of the per-thread tool server that names the session it
// serves, so that its audit entries name the session's agent kind and
// agent_id (tools.ToolsOptions.Agent, AgentID), and go to serve's own
// audit log (EnvRegistryTeam, set by the composition root in
// Config.ToolServerEnv: a Claude Code session team's registry is not named
// after the team).
const (
	EnvSessionKind    = "ATM_SESSION_KIND"
	EnvSessionAgentID = "ATM_SESSION_AGENT_ID"
	EnvRegistryTeam   = "ATM_SESSION_REGISTRY_TEAM"
)

// threadParams builds the parameters of a thread of kind on b: settings,
// the injected context appended to the caller's developer instructions
// (FR-2.2), the per-thread ATM tool server (ToolServers: each backend
// gives it to its agent in its own way) and the environment and writable
// roots of the session's place (Env, WritableRoots: each backend gives
// them to its agent's commands; no writable roots for a thread held
// read-only). The settings only some kinds take become b's own Options,
// from those it takes (backend.Configurable); a sandboxed backend's
// settings are held to the operator's policy first (policy.go).
func threadParams(c *Config, sc sessionContext, st ThreadSettings, kind string, b Backend) backend.ThreadParams {
	if backend.IsSandboxed(b) {
		st = c.holdPolicy(st) // the operator's sandbox policy (policy.go)
	}
	dev := appendInstructions(st.DeveloperInstructions, sc.render())
	p := backend.ThreadParams{Cwd: sc.Cwd, Model: st.Model, BaseInstructions: st.BaseInstructions, DeveloperInstructions: dev,
		Env: placeEnv(sc.Place)}
	if len(c.ToolServer) > 0 {
		env := map[string]string{"ATM_HOME": c.Home, EnvSessionKind: kind, EnvSessionAgentID: sc.AgentID}
		for k, v := range c.ToolServerEnv {
			env[k] = v
		}
		p.ToolServers = []backend.ToolServer{{Name: "atm", Command: c.ToolServer[0],
			Args: append(append([]string{}, c.ToolServer[1:]...), "--team", c.Team, "--identity", sc.Identity), Env: env}}
	}
	if cf, ok := b.(backend.Configurable); ok {
		all, values := st.values(), map[string]any{}
		for _, name := range cf.Settings() {
			if v, ok := all[name]; ok && set(v) {
				values[name] = v
			}
		}
		p.Options = cf.Options(values)
	}
	if sc.Place != nil && st.Sandbox != ReadOnly {
		// What git needs to commit on the worktree's branch; never for a
		// read-only thread (the operator's policy held above).
		p.WritableRoots = sc.Place.WritableRoots
	}
	return p
}

// capResult cuts a result text over the cap with a marker that says how to
// get the rest (agent_status with an offset).
func capResult(n int, agentID, text string) string {
	if len(text) <= n || utf8.RuneCountInString(text) <= n {
		return text // every turn's result: counted, not copied
	}
	r := []rune(text)
	return string(r[:n]) + fmt.Sprintf("\n\n[… truncated: %d of %d characters shown. Get the rest with agent_status "+
		"{\"agent_id\": %q, \"offset\": %d}.]", n, len(r), agentID, n)
}

// Problem returns the running (or last) turn's last error or retry notice
// from its agent, nil when none; a new notice is a new *Problem. It is cheap
// enough to poll (the tools' keep-alive does, to pass a retry notice on as
// progress at once).
func (s *Session) Problem() *Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.act.problem
}

// withProblem adds the agent's last error or retry notice of the turn to
// a timeout's error (and the log): a turn that hung because the agent could not
// reach its model says so, instead of an empty partial.
func (s *Session) withProblem(err error) error {
	var pe *proxyerr.Error
	if !errors.As(err, &pe) || pe.Kind != proxyerr.ErrRequestTimeout {
		return err
	}
	s.mu.Lock()
	p := s.act.problem
	s.mu.Unlock()
	if p == nil {
		return err
	}
	c := *pe
	c.Data = map[string]any{}
	for k, v := range pe.Data {
		c.Data[k] = v
	}
	c.Data["codex_last_error"] = p.Message
	c.Data["codex_retrying"] = p.Retrying
	rec := s.Record()
	c.Msg += "; " + s.m.cat.Name(rec.Kind()) + "'s last notice: " + p.Message
	s.m.log.Warn("turn timed out", "agent_id", rec.AgentID, "agent", rec.Kind(), "last_error", p.Message, "retrying", p.Retrying)
	return &c
}

// turnError maps a failure of a turn on b, the backend of rec's kind, to
// the proxy's errors (FR-11, FR-14): a
// backend that runs one process per thread has its own words
// (agenterrors.go); one whose child runs every thread (a
// backend.WholeRestarter) says how long the turn waited, and its other
// failures come with what brings the child back (BackendError).
func turnError(rec registry.Session, b Backend, err error) error {
	if !backend.RestartsAsWhole(b) {
		return agentError(rec, err)
	}
	var te *backend.TimeoutError
	if errors.As(err, &te) {
		return proxyerr.New(proxyerr.ErrRequestTimeout, map[string]any{"agent_id": rec.AgentID, "threadId": firstNonEmpty(te.ThreadID, rec.BackendID),
			"timeout_secs": te.After.Seconds(), "partial": te.Partial},
			"%s turn timed out after %s (agent_id %s)", rec.Kind(), te.After, rec.AgentID)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return BackendError(rec.Kind(), err)
}

// BackendError maps a failure of a child that runs every thread of kind's
// backend (a backend.WholeRestarter) to the proxy's errors:
// CHILD_PROCESS_DEAD with how it died (FR-11.2) and what brings it back,
// REQUEST_TIMEOUT, or an internal error; the failure stays underneath
// (errors.As finds the *backend.ExitError). The advice is the backend's
// supervisor's when it gave one (a *backend.RecoveryError: restart,
// refused until, shutting down), else to restart the MCP server. An error
// that is a proxy error already is returned as it is: the supervisor of a
// kind's child may map its failures in its kind's own words (serve's
// Codex supervisor does, naming its configuration and how to install it).
func BackendError(kind string, err error) error {
	var pe *proxyerr.Error
	if errors.As(err, &pe) {
		return err // mapped already (by the kind's supervisor, a refused restart on demand, …)
	}
	advice, data := "restart the MCP server to start a new one", map[string]any{}
	var re *backend.RecoveryError
	if errors.As(err, &re) {
		advice = re.Advice
		for k, v := range re.Data {
			data[k] = v
		}
	}
	var ee *backend.ExitError
	var nf *backend.NotFoundError
	switch {
	case errors.As(err, &nf):
		data["command"], data["path"], data["not_found"] = nf.Bin, nf.Path, true
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data, "%s could not be started: %s; install it, then %s", kind, nf, advice)
	case errors.As(err, &ee):
		status := exitFacts(ee, data)
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data, "%s process is not running: %s (%s)", firstNonEmpty(ee.Child, kind+" child"), status, advice)
	case errors.Is(err, backend.ErrHandshake):
		inner := err
		if re != nil {
			inner = re.Err
		}
		data["handshake"] = inner.Error()
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data,
			"%s could not be started: %v (check its command and handshake_timeout_secs, then %s)", kind, inner, advice)
	case errors.Is(err, context.DeadlineExceeded):
		return proxyerr.Wrap(proxyerr.ErrRequestTimeout, err, nil, "%s did not answer in time", kind)
	}
	return proxyerr.Wrap(proxyerr.ErrInternal, err, nil, "%s: %v", kind, err)
}

// exitFacts puts how a child died into data (exit_code, signal, stderr,
// reason) and returns it in words: "exited with code 3", "stopped: it
// wrote 10412 lines in a row that are not JSON-RPC on stdout, and 10000
// is the limit (killed by signal killed)" (ExitStatus.String says why the
// backend killed it).
func exitFacts(ee *backend.ExitError, data map[string]any) string {
	data["exit_code"] = ee.Status.Code
	if ee.Status.Signal != "" {
		data["signal"] = ee.Status.Signal
	}
	if ee.Stderr != "" {
		data["stderr"] = ee.Stderr
	}
	status := ee.Status
	if status.Reason == "" {
		status.Reason = ee.Reason
	}
	if status.Reason != "" {
		data["reason"] = status.Reason
	}
	return status.String()
}

// turnHandler receives one turn's events and approvals from the backend.
// Its methods run on the backend's reader goroutine and never block.
type turnHandler struct {
	m     *Manager
	s     *Session // nil for a reply to a thread no session has
	call  CallRef
	asker Asker // nil: the Manager's
}

// Event records e in the session and passes it on. The event is
// translated (backend.Event.Activity) once, for both, and only when
// something reads it: a session, or a request that wants progress.
func (h *turnHandler) Event(e backend.Event) {
	var ids IDs
	var act backend.Activity
	if h.s != nil || h.call != nil && h.call.WantsProgress() {
		act = e.Activity()
	}
	if h.s != nil {
		ids = h.s.recordEvent(e.Type, e.ThreadID, act)
		h.s.changed()
	}
	sink := h.sink()
	if sink == nil {
		return
	}
	ok := sink.Event(e, act, ids, h.call)
	if h.s != nil {
		if ok {
			h.s.forwarded.Add(1)
		} else {
			h.s.dropped.Add(1)
		}
	}
}

// Flush writes the events held back since the backend's output last ran
// dry (backend.Flusher).
func (h *turnHandler) Flush() {
	if sink := h.sink(); sink != nil {
		sink.Flush()
	}
}

func (h *turnHandler) Approval(a *backend.Approval) {
	h.m.wg.Add(1)
	go func() {
		defer h.m.wg.Done()
		h.bridgeApproval(a)
	}()
}

func (h *turnHandler) sink() Sink { return h.m.cfg.Sink }
