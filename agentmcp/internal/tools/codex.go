package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
)

// codexArgNames are the arguments of the codex tool. The proxy-only ones
// (identity, agent_file, agent_id, role, tag, auto_mail, background,
// thread_id) are never forwarded: Codex 0.153.4 rejects unknown arguments.
var codexArgNames = []string{"prompt", "agent_file", "agent_id", "identity", "role", "tag", "auto_mail", "cwd", "host", "isolation", "base",
	"model", "approval-policy", "sandbox", "base-instructions", "developer-instructions", "compact-prompt", "profile", "config",
	"background", "thread_id", "output_schema"}

// defaultContinuation is the prompt of a resume without one.
const defaultContinuation = "Continue where you left off."

// codex starts a session (FR-2, FR-3, FR-16), adopts a Codex session
// (thread_id, X-7) or resumes one by agent_id.
func (e *Env) codex(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("codex", codexArgNames...); err != nil {
		return nil, err
	}
	return e.teamWarned(e.start(ctx, c, e.m.Catalogue().Default()))
}

// start is codex for a session of agent kind (agent_start's agent): a new
// session, an adoption (Codex only) or a resume by agent_id. The call's
// arguments have been checked against the tool's names.
func (e *Env) start(ctx context.Context, c *mcpconn.ToolCall, kind string) (*mcpconn.ToolResult, error) {
	a := c.Args
	str, err := a.Strs("prompt", "agent_file", "agent_id", "identity", "role", "tag", "cwd", "model",
		"approval-policy", "sandbox", "base-instructions", "developer-instructions", "compact-prompt", "profile", "thread_id", "isolation", "base")
	if err != nil {
		return nil, err
	}
	config, err := a.Object("config")
	if err != nil {
		return nil, err
	}
	if err := checkConfigEnums(config); err != nil {
		return nil, err
	}
	autoMail, autoMailSet, err := a.Bool("auto_mail")
	if err != nil {
		return nil, err
	}
	background, _, err := a.Bool("background")
	if err != nil {
		return nil, err
	}
	schema, err := outputSchemaArg(a)
	if err != nil {
		return nil, err
	}
	prompt, agentFile, agentID, adopt := str["prompt"], str["agent_file"], str["agent_id"], str["thread_id"]
	if agentID != "" {
		if agentFile != "" || adopt != "" {
			return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"arguments": []string{"agent_id", "agent_file", "thread_id"}},
				"agent_id (resume) excludes agent_file and thread_id")
		}
		asked := session.ThreadSettings{Sandbox: str["sandbox"], Profile: str["profile"], Config: config}
		return e.resume(ctx, c, agentID, kind, str["identity"], prompt, str["cwd"], str["isolation"], str["base"], asked, background, schema)
	}
	var seed string
	if adopt != "" {
		if agentFile != "" {
			return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"arguments": []string{"thread_id", "agent_file"}},
				"thread_id (adopt) and agent_file are mutually exclusive")
		}
		if other := e.m.ByThread(adopt); other != nil && other.Record().Status.Live() {
			id := other.Record().AgentID
			return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"thread_id": adopt, "agent_id": id},
				"Codex session %s is already bound to agent_id %s; continue it with codex-reply", adopt, id)
		}
		r, note, err := e.adoptNote(adopt)
		if err != nil {
			return nil, err
		}
		seed = note
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
		return nil, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"arguments": []string{"prompt", "agent_file"}},
			"prompt and agent_file are mutually exclusive: give exactly one")
	}
	if strings.TrimSpace(prompt) == "" && agentFile == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "prompt"},
			"argument \"prompt\" is required (or agent_file, or agent_id to resume)")
	}
	host, err := e.hostArg(a, kind)
	if err != nil {
		return nil, err
	}
	cwd, err := e.m.Catalogue().ResolveCwd(ctx, host, str["cwd"])
	if err != nil {
		return nil, err
	}
	if agentFile != "" {
		path := agentFile
		if !filepath.IsAbs(path) {
			// The file is read here: for an agent on a host, relative
			// to serve's directory, not to the cwd there.
			dir := cwd
			if host != "" {
				dir = e.cfg.Cwd
			}
			path = filepath.Join(dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, proxyerr.New(proxyerr.ErrAgentFileNotFound, map[string]any{"agent_file": agentFile, "path": path},
				"agent_file %q cannot be read: %v", agentFile, errors.Unwrap(err))
		}
		if strings.TrimSpace(string(b)) == "" {
			return nil, proxyerr.New(proxyerr.ErrAgentFileNotFound, map[string]any{"agent_file": agentFile, "path": path},
				"agent_file %q is empty", agentFile)
		}
		prompt = string(b)
		agentFile = path
	}
	identity := str["identity"]
	if identity == "" {
		identity = e.cfg.DefaultIdentity
	}
	if err := atmclient.ValidateName("identity", identity); err != nil {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "identity"}, "%v", err)
	}
	settings, err := e.m.Catalogue().Defaults(kind, str["role"])
	if err != nil {
		return nil, err
	}
	if v := str["model"]; v != "" {
		settings.Model = v
	}
	if v := str["approval-policy"]; v != "" {
		settings.ApprovalPolicy = v
	}
	if v := str["sandbox"]; v != "" {
		settings.Sandbox = v
	}
	settings.BaseInstructions = str["base-instructions"]
	if e.m.Catalogue().TakesDefaults(kind) {
		settings.BaseInstructions = firstNonEmpty(str["base-instructions"], e.cfg.BaseInstructions)
	}
	settings.DeveloperInstructions = str["developer-instructions"]
	settings.CompactPrompt = str["compact-prompt"]
	settings.Profile = str["profile"]
	settings.Config = config

	isolation := e.isolation(str["isolation"], str["role"])
	if str["base"] != "" && isolation != session.IsolationWorktree {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "base", "isolation": isolation},
			"base is where an isolated agent's branch starts: give it with isolation \"worktree\"")
	}
	req := session.CreateRequest{Identity: identity, Cwd: cwd, Tag: str["tag"], Role: str["role"], AgentFile: agentFile, Settings: settings, Agent: kind,
		Isolation: isolation, Host: host}
	if isolation == session.IsolationWorktree {
		req.Base = firstNonEmpty(str["base"], e.cfg.WorktreeBase)
	} else if e.cfg.Places != nil {
		req.StartHead = e.cfg.Places.Head(ctx, host, cwd) // what agent_diff reads its change against
	}
	if autoMailSet {
		req.AutoMail = &autoMail
	}
	s, err := e.m.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	shared := e.sharedCheckout(s) // a second agent without isolation in one repository
	if adopt != "" {
		s.Adopt(adopt, seed)
	}
	first := adopt == "" // a new session's first turn: one that fails keeps no session
	res, err := e.run(ctx, c, s, session.Turn{Prompt: prompt, Source: session.SourceClaude, Output: schema}, background, first)
	res = warned(withWorktree(res, s), shared)
	if err == nil && adopt == "" && refusedStart(res, s) {
		// Codex refused the session outright (an isError result without a
		// thread: a setting, its config.toml): nothing is kept either.
		if e.m.Discard(context.WithoutCancel(ctx), s, errors.New(strings.ToLower(e.m.Catalogue().Name(kind))+" refused it: "+res.Text)) {
			note := fmt.Sprintf("\n\n(%s refused to start the session; no session was kept: identity %q is free)", e.m.Catalogue().Name(kind), s.Record().Identity)
			res.Text += note
			if m, ok := res.Structured.(map[string]any); ok {
				m["content"], m["session_kept"] = res.Text, false
			}
		}
	}
	if err != nil && adopt == "" && !errors.Is(err, session.ErrAnswered) && !errors.Is(err, proxyerr.ErrRequestTimeout) && !errors.Is(err, context.Canceled) {
		// A session whose creation failed (Codex missing, dead, or refusing
		// a setting) takes nothing with it. A timed-out or cancelled first
		// turn may still have a thread in Codex: that session stays.
		if e.m.Discard(context.WithoutCancel(ctx), s, err) {
			var pe *proxyerr.Error
			if errors.As(err, &pe) {
				c := *pe
				c.Msg += fmt.Sprintf(" (no session was kept: identity %q is free)", s.Record().Identity)
				err = &c
			}
		}
	}
	return res, err
}

// refusedStart reports whether res, the answer to a session's first turn,
// is Codex refusing to start it: an isError result (not an interrupt) with
// no thread for the session.
func refusedStart(res *mcpconn.ToolResult, s *session.Session) bool {
	if res == nil || !res.IsError || res.Task != nil || res.Input != nil || s.Record().BackendID != "" {
		return false
	}
	m, ok := res.Structured.(map[string]any)
	return ok && m["status"] != "interrupted" && m["status"] != "busy"
}

// run runs a turn on s for the call: in the background (answered at once),
// or queued and answered with its result.
//
// first is set for a new session's first turn: in the background, one that
// fails or that Codex refuses keeps no session, as a waited-for one
// (codex) or a task's (discardFailedFirst).
func (e *Env) run(ctx context.Context, c *mcpconn.ToolCall, s *session.Session, t session.Turn, background, first bool) (*mcpconn.ToolResult, error) {
	t.Call = callRef{c} // a background turn's events still name the request that started it
	switch {
	case c.Modern && background:
		t.Asker = session.QueueAsker{} // no call waits: agent_status lists it, agent_respond answers
	case c.Tasks:
		return e.runTask(ctx, c, s, t) // an MCP task (tasks.go)
	case c.Modern && c.Elicitation:
		return e.runRoundTrip(ctx, c, s, t)
	case c.Modern:
		t.Asker = session.NoAsker{} // approval_fallback decides
	}
	if background {
		var then func(*session.TurnResult, error)
		if first {
			discard := e.discardFailedFirst(s)
			then = func(r *session.TurnResult, err error) { discard(r, err) }
		}
		r, err := s.RunBackgroundThen(t, then)
		if err != nil {
			return nil, err
		}
		text := fmt.Sprintf("started in the background: agent_id %s (%s). Poll with agent_status or wait with agent_wait.", r.AgentID, r.Identity)
		return &mcpconn.ToolResult{Text: text, Structured: map[string]any{
			"agent_id": r.AgentID, "threadId": r.ThreadID, "identity": r.Identity, "content": text, "status": "busy",
		}}, nil
	}
	stop := e.keepAlive(c, s)
	r, err := s.Run(ctx, t)
	stop()
	if err != nil {
		return nil, err
	}
	return turnResult(r), nil
}

// codexReply continues a session by agent_id, or by Codex thread id
// (threadId / conversationId), on the goroutine reading the client: it
// checks the call and queues the turn in read order. A thread id no session
// knows is passed to Codex as it is, without context (Codex decides whether
// it exists).
func (e *Env) codexReply(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("codex-reply", append([]string{"prompt", "agent_id", "threadId", "conversationId", "cwd", "background", "steer", "output_schema"}, budgetArgNames...)...); err != nil {
		return nil, err
	}
	return e.reply(ctx, c, "codex-reply")
}

// reply is codex-reply and agent_reply (tool): the call's arguments have
// been checked against the tool's names.
func (e *Env) reply(ctx context.Context, c *mcpconn.ToolCall, tool string) (*mcpconn.ToolResult, error) {
	a := c.Args
	background, _, err := a.Bool("background")
	if err != nil {
		return nil, err
	}
	steer, _, err := a.Bool("steer")
	if err != nil {
		return nil, err
	}
	schema, err := outputSchemaArg(a)
	if err != nil {
		return nil, err
	}
	if steer && schema != nil {
		return nil, steerSchemaError()
	}
	var prompt, agentID, threadID, convID, cwdArg string
	for _, arg := range []struct {
		name string
		v    *string
	}{{"prompt", &prompt}, {"agent_id", &agentID}, {"threadId", &threadID}, {"conversationId", &convID}, {"cwd", &cwdArg}} {
		if *arg.v, err = a.Str(arg.name); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "prompt"}, "argument \"prompt\" is required")
	}
	budgetTokens, teamTokens, err := budgets(a)
	if err != nil {
		return nil, err
	}
	if threadID == "" {
		threadID = convID
	}
	var s *session.Session
	switch {
	case agentID != "":
		if s = e.m.Get(agentID); s == nil {
			return nil, e.m.Absent().NotFound(agentID)
		}
	case threadID != "":
		if s = e.m.ByThread(threadID); s == nil {
			mcpconn.Release(ctx)
			r, err := e.m.AnonymousReply(ctx, callRef{c}, threadID, prompt)
			if err != nil {
				return nil, err
			}
			return &mcpconn.ToolResult{Text: r.Text, IsError: r.IsError, Structured: map[string]any{
				"agent_id": "", "threadId": r.ThreadID, "identity": "", "content": r.Text, "status": r.Status,
			}}, nil
		}
	case tool != "codex-reply":
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "agent_id"}, "argument \"agent_id\" is required")
	default:
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "agent_id"}, "codex-reply needs agent_id (or threadId)")
	}
	rec := s.Record()
	if !rec.Status.Live() {
		with := "the codex tool"
		if tool != "codex-reply" {
			with = "agent_start"
		}
		return nil, proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": rec.AgentID, "status": string(rec.Status)},
			"session %s is %s; resume it with %s and agent_id", rec.AgentID, rec.Status, with)
	}
	if err := e.setBudgets(ctx, s, budgetTokens, teamTokens); err != nil {
		return nil, err // budget.go
	}
	if cwdArg != "" {
		mcpconn.Release(ctx) // a directory to look at
		cwd, err := e.m.Catalogue().ResolveCwd(ctx, rec.Host, cwdArg)
		if err != nil {
			return nil, err
		}
		if cwd, err = placeCwd(s, cwd); err != nil {
			return nil, err // an isolated agent stays in its worktree
		}
		s.SetCwd(cwd)
	}
	if background {
		mcpconn.Release(ctx)
	}
	t := session.Turn{Prompt: prompt, Source: session.SourceClaude, Output: schema}
	if steer && !c.Tasks {
		if res, err := e.steer(ctx, c, s, t, background); res != nil || err != nil {
			return res, err
		}
	}
	t.NotSteered = steer // no turn ran, or it did not take the prompt: a turn of its own
	return e.run(ctx, c, s, t, background, false)
}

// steer adds a reply's prompt to the session's running turn (steer: true)
// and answers with that turn's result once it has ended, or at once in
// the background. It returns nil, nil when the prompt was not steered (no
// turn runs, the agent cannot take input into one, or it did not take
// this): the reply then runs as a turn of its own.
func (e *Env) steer(ctx context.Context, c *mcpconn.ToolCall, s *session.Session, t session.Turn, background bool) (*mcpconn.ToolResult, error) {
	t.Call = callRef{c}
	wait, err := s.SteerTurn(t)
	if err != nil || wait == nil {
		return nil, err
	}
	if background {
		rec := s.Record()
		text := fmt.Sprintf("steered into the running turn of agent_id %s (%s); wait for that turn's result with agent_wait.", rec.AgentID, rec.Identity)
		return &mcpconn.ToolResult{Text: text, Structured: map[string]any{
			"agent_id": rec.AgentID, "threadId": rec.BackendID, "identity": rec.Identity, "content": text, "status": "busy", "steered": true,
		}}, nil
	}
	stop := e.keepAlive(c, s)
	r, err := wait(ctx)
	stop()
	if err != nil {
		return nil, err
	}
	return turnResult(r), nil
}

// resume is codex with agent_id (FR-16.3, FR-17.7): a live session just
// gets the prompt; a closed, stale or interrupted one is bound again (its
// identity claimed), its saved summary put before the first turn. The
// session keeps its settings; asked (the call's sandbox, profile and config)
// is only checked against the operator's policy, so that a resume never
// seems to widen a read-only session.
//
// kind is the agent kind the call asked for: agent_start's agent, when it
// gives one, must be the session's own. A session keeps its isolation: an
// isolated one re-enters its worktree (the session manager's Rebind), and
// the call's isolation, when it gives one, must be the session's.
func (e *Env) resume(ctx context.Context, c *mcpconn.ToolCall, agentID, kind, identity, prompt, cwdArg, isolation, base string, asked session.ThreadSettings, background bool, schema *outputschema.Schema) (*mcpconn.ToolResult, error) {
	s := e.m.Get(agentID)
	if s == nil {
		return nil, e.m.Absent().NotFound(agentID) // names the instance that has it, if one does
	}
	if err := sameIdentity(agentID, s.Record().Identity, identity); err != nil {
		return nil, err
	}
	if err := sameKind(c, s, kind); err != nil {
		return nil, err
	}
	if err := e.sameHost(c, s); err != nil {
		return nil, err
	}
	if err := e.m.Catalogue().CheckSettings(s.Record().Role, asked); err != nil {
		return nil, err
	}
	if err := sameIsolation(s, isolation, base); err != nil {
		return nil, err
	}
	if err := e.m.Rebind(s, session.SourceClaude); err != nil {
		return nil, err
	}
	if cwdArg != "" {
		cwd, err := e.m.Catalogue().ResolveCwd(ctx, s.Record().Host, cwdArg)
		if err != nil {
			return nil, err
		}
		if cwd, err = placeCwd(s, cwd); err != nil {
			return nil, err
		}
		s.SetCwd(cwd)
	}
	if strings.TrimSpace(prompt) == "" {
		prompt = defaultContinuation
	}
	res, err := e.run(ctx, c, s, session.Turn{Prompt: prompt, Source: session.SourceResume, Output: schema}, background, false)
	return withWorktree(res, s), err
}

// sameIsolation checks a resume's isolation and base against the session:
// it keeps its own isolation, and an isolated one its worktree and base.
func sameIsolation(s *session.Session, isolation, base string) error {
	has := session.IsolationNone
	if s.Record().Worktree != nil {
		has = session.IsolationWorktree
	}
	if isolation != "" && isolation != has {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "isolation", "isolation": isolation, "session_isolation": has},
			"session %s runs with isolation %q, not %q: a resume keeps it (start a new session for another)", s.Record().AgentID, has, isolation)
	}
	if base != "" {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "base"},
			"a resume keeps the session's worktree and its base: base is for a new isolated agent")
	}
	return nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
