package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Server is the MCP proxy: one upstream MCP connection (mcpconn), one Codex
// child (codexchild), many sessions (session), the tools between them
// (tools). Create it with New and run it with Run. It owns nothing
// long-lived beyond what Run starts and stops.
type Server struct {
	opts     Options
	log      *slog.Logger
	backend  *codex // the Codex child, replaced by restarts
	reg      *registry.Registry
	audit    *registry.Audit
	auditor  *session.Auditor
	atm      *atmclient.Client
	git      *gitctx.Watcher
	conn     *mcpconn.Conn
	sessions *session.Manager
	tools    *tools.Env
	mail     mailHooks
	frames   *frames        // Claude Code's protocol frames and idle notifications (frames.go)
	team     teamHooks      // the sessions' mail hooks: membership around mail (team.go)
	lead     *leadPush      // mail for the client's own identity (leadpush.go)
	feed     *feed.Feed     // what the serve publishes for a live view (nil for a team that may be a typo)
	notes    *resourceNotes // tells the client when the sessions' resources change (resources.go)
	// notifying are the notifications being passed on to Codex
	// (handler.Notify), joined by shutdown.
	notifying *owned
	// places are the isolated agents' worktrees and the conflict radar
	// (places.go); nil when git is missing.
	places *places.Places
	// hosts are the machines other than this one where agents run
	// (hosts.go): connected at Run, closed at shutdown.
	hosts *hostSet

	// configWarned says the configuration's warnings once (configwarn.go).
	configWarned configWarned
	// noticed says the notices once, with the first tool result (notice.go).
	noticed noticed
}

// New opens the instance registry (claiming the instance identity) and the
// audit log, and returns a Server ready to Run. It fails with a
// *registry.ConflictError when another live process holds the identity.
func New(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errors.New("proxy: no codex backend")
	}
	opts.setDefaults()
	log := opts.Logger.With("component", "proxy", "team", opts.Team, "instance", opts.Identity)
	for kind, name := range map[string]string{"team": opts.Team, "identity": opts.Identity, "default identity": opts.DefaultIdentity} {
		if err := atmclient.ValidateName(kind, name); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	reg, err := openRegistry(opts)
	if err != nil {
		return nil, err
	}
	audit, err := reg.Dir().OpenAudit(registry.AuditConfig{Now: opts.Now, Deferred: opts.TeamMissing})
	if err != nil {
		reg.Close()
		return nil, err
	}
	atm, err := atmclient.New(atmclient.Config{Home: opts.Home, Logger: opts.Logger})
	if err != nil {
		audit.Close()
		reg.Close()
		return nil, err
	}
	s := &Server{opts: opts, log: log, reg: reg, audit: audit, atm: atm,
		auditor: session.NewAuditor(audit, log), git: gitctx.New(gitctx.Config{Logger: log})}
	s.backend = newCodex(opts.Backend, opts, log, s.auditor)
	s.frames = newFrames(s)
	s.lead = newLeadPush(opts, atm, log)
	s.notes = newResourceNotes()
	s.notifying = newOwned()
	s.team = teamHooks{mail: &s.mail, lead: s.lead, atm: atm, team: opts.Team, cwd: s.sessionCwd, kind: s.sessionKind, log: log, now: opts.Now, added: map[string]bool{}}
	s.conn = mcpconn.New(mcpconn.Config{
		Handler:      handler{s},
		ServerInfo:   mcpconn.ServerInfo{Name: "atm-agent-mcp", Title: "ATM agent proxy for Codex", Version: opts.Version},
		Instructions: instructions(opts.Notices),
		Tools:        tools.Definitions,
		EventQueue:   opts.EventQueue,
		Protocol:     opts.MCPProtocol,
		Logger:       log,
	})
	s.hosts = &hostSet{places: newHostPlaces(opts.Hosts, log), stale: opts.StaleInstance, log: log}
	s.places = s.newPlaces() // with the hosts' worktrees
	var placesView session.Places
	if s.places != nil {
		placesView = s.places
	}
	// One backend per agent kind: Codex's supervisor under the default
	// kind, each configured agent under its own name.
	backends := map[string]session.Backend{registry.DefaultKind: s.backend}
	for kind, b := range opts.Agents {
		backends[kind] = b
	}
	var registryView session.Registry = session.RegistryOf(reg)
	if opts.RegistryTeam != opts.Team {
		registryView = teamStamp{Registry: registryView, team: opts.Team, reg: reg}
	}
	if opts.wrapRegistry != nil {
		registryView = opts.wrapRegistry(registryView)
	}
	var observer session.Observer
	if !opts.TeamMissing {
		// The feed's record goes into the instance directory, which a
		// team that may be a typo must not get (registry Deferred).
		s.feed, err = feed.New(feed.Config{
			Serve: feed.Serve{Instance: opts.RegistryInstance, Team: opts.Team, PID: os.Getpid(), Started: opts.Now(), Version: opts.Version},
			Dir:   filepath.Join(reg.Dir().Path(), opts.RegistryInstance), ATM: atm, Logger: log, Now: opts.Now, Diffs: s.feedDiffs(),
		})
		if err != nil {
			audit.Close()
			reg.Close()
			return nil, err
		}
		observer = s.feed
	}
	s.sessions, err = session.NewManager(session.Config{
		Home: opts.Home, Team: opts.Team, Backends: backends, Registry: registryView, Audit: s.auditor, Git: s.git,
		Sink: eventSink{s.conn}, Asker: asker{s.conn, log}, Mail: &s.team, Observer: observer, Places: placesView, Hosts: s.hosts.sessionHosts(),
		Budgets: opts.Budgets, BudgetNotice: s.budgetNotice, Prices: opts.Prices,
		Defaults: opts.Defaults, Roles: opts.Roles, BaseInstructions: opts.BaseInstructions, ExtraInstructions: opts.ExtraInstructions,
		ToolServer: opts.ToolServer, ToolServerEnv: opts.ToolServerEnv,
		RequestTimeout: opts.RequestTimeout, MaxSessions: opts.MaxSessions, ElicitationTimeout: opts.ElicitationTimeout,
		ApprovalFallback: opts.ApprovalFallback, SummaryTimeout: opts.SummaryTimeout, RecordsClosed: opts.RecordsClosed, AutoMail: opts.AutoMail, AutoMailFor: opts.AutoMailFor,
		PersistThreads: opts.PersistThreads, EventRing: opts.EventRing, MaxResultChars: opts.MaxResultChars, Cwd: opts.Cwd,
		Changed: s.notes.changed, Logger: log, Now: opts.Now,
	})
	if err != nil {
		s.git.Close()
		audit.Close()
		reg.Close()
		return nil, err
	}
	s.backend.afterRestart = func() int { return s.sessions.AfterRestart(s.backend) }
	s.backend.restarted = s.resumeMail
	return s, nil
}

// Run serves the MCP client on r/w until the client closes stdin or ctx is
// cancelled (SIGTERM/SIGINT), then shuts down gracefully (FR-7): summaries,
// registry, identities, child. It returns nil after a graceful shutdown.
func (s *Server) Run(ctx context.Context, r io.Reader, w io.Writer) error {
	s.tools = tools.New(tools.Config{
		Sessions: s.sessions, ATM: s.atm, Client: s.conn, Child: s.backend, Restarter: s.backend, Team: s.opts.Team, Identity: s.opts.Identity,
		BaseInstructions: s.opts.BaseInstructions, MaxSessions: s.opts.MaxSessions,
		DefaultIdentity: s.opts.DefaultIdentity, Audit: s.auditor, CodexHome: s.opts.CodexHome, Cwd: s.opts.Cwd,
		Started: s.opts.Now(), Logger: s.log, Now: s.opts.Now, ProgressInterval: s.opts.ProgressInterval, LeadMail: s.leadMail,
		ConfigWarnings: s.opts.ConfigWarnings, Notices: s.opts.Notices, TeamProblem: s.opts.TeamProblem, AgentCheck: s.opts.AgentCheck, HostFor: s.opts.HostFor, Hosts: s.hosts.statuses, Agents: agentStatuses(s.opts.Agents),
		Places: s.places, Isolation: s.opts.Isolation, RoleIsolation: s.opts.RoleIsolation, WorktreeBase: s.opts.WorktreeBase,
		MergeCheck: s.opts.MergeCheck, MaxResultChars: s.opts.MaxResultChars,
	})
	if s.places != nil {
		s.places.Start() // the conflict radar, joined at shutdown
	}
	// The bridge runs and the lead's mail path is settled before the first
	// request is read, so that agent_status right after initialize shows
	// the path as it stays. Sessions resumed at start (--resume) are bound
	// only once the connection runs: their mail turns send events to it.
	mailCtx, stopMail := context.WithCancel(context.Background())
	defer stopMail()
	notesCtx, stopNotes := context.WithCancel(context.Background())
	var noting sync.WaitGroup
	defer func() { stopNotes(); noting.Wait() }()
	noting.Go(func() { s.notes.run(notesCtx, s.tools.ResourceURIs, s.conn.ResourcesChanged) })
	s.team.pruneStale(s.identityFree)
	mailErr := s.startMail(mailCtx)
	if mailErr != nil {
		s.log.Error("mail delivery disabled", "err", mailErr)
	} else {
		s.lead.start(s.mail.bridge())
		s.joinLead()
	}
	s.hosts.start(s.hostBack) // after the mail: a host that is back delivers what waited
	if s.feed != nil {
		// Published before the first request is read: a view finds a
		// serve that answered initialize.
		if err := s.feed.Start(s.sessions); err != nil {
			s.log.Warn("no live view of this serve: the feed did not start", "err", err)
			s.feed = nil
		}
	}
	s.conn.Start(r, w)
	if mailErr == nil {
		s.bindLive()
	}
	// Under Claude Code, the client's conversation is followed when it
	// moves to a background session (handover.go).
	followCtx, stopFollow := context.WithCancel(context.Background())
	clientEnded := make(chan clientEnd, 1)
	var following sync.WaitGroup
	if s.opts.ClaudeSessionID != "" && s.opts.ParkPoll > 0 {
		following.Go(func() { s.watchClient(followCtx, clientEnded) })
		following.Go(func() { s.takeUp(followCtx) })
	}
	var err error
	select {
	case err = <-s.conn.Done():
	case <-ctx.Done():
		s.log.Info("shutdown requested")
	case end := <-clientEnded:
		if end.movedTo != "" {
			s.handOver(end.movedTo)
		}
	}
	stopFollow()
	following.Wait()
	s.shutdown()
	return err
}

// agentStatuses are the other agent kinds' backends as the tools see them
// (their status).
func agentStatuses(agents map[string]backend.Backend) map[string]interface{ Status() backend.Status } {
	out := make(map[string]interface{ Status() backend.Status }, len(agents))
	for kind, b := range agents {
		out[kind] = b
	}
	return out
}

// shutdown is FR-7, in this order: no new requests; every live session
// closed with a summary; the lead's pushes ended, then mail delivery
// stopped (before the child, so that batches already written to it, and
// pushed to the lead, are marked read); requests cancelled; sessions' jobs
// ended and their state written; every kind's backend stopped
// (closeBackends), then the notifications still being passed on to a child
// ended; the connection closed; the audit log and the registry
// (identities) released.
func (s *Server) shutdown() {
	s.conn.Refuse(proxyerr.New(proxyerr.ErrInvalidSessionParams, nil, "the proxy is shutting down"))
	s.sessions.Shutdown()
	if s.places != nil {
		s.places.Close() // the radar's goroutine: the worktrees were let go of above
	}
	if !s.frames.wait(5 * time.Second) {
		s.log.Warn("a shutdown request was still being answered at shutdown")
	}
	s.lead.close() // its pushes end before the bridge, which marks what they pushed
	if err := s.mail.close(); err != nil {
		s.log.Warn("stopping mail delivery", "err", err)
	}
	s.team.leave(s.opts.Identity) // if joinLead added it
	s.conn.CancelAll()
	s.sessions.Stop()
	if s.feed != nil {
		if err := s.feed.Close(); err != nil {
			s.log.Debug("closing the feed", "err", err)
		}
	}
	s.closeBackends(10 * time.Second)
	s.notifying.stop(0) // the children are stopped: what is still being passed on is dropped
	if !s.conn.Wait(5*time.Second) || !s.sessions.Wait(time.Second) {
		s.log.Warn("some requests were still running at shutdown")
	}
	s.conn.Close()
	if err := s.git.Close(); err != nil {
		s.log.Debug("closing the git watcher", "err", err)
	}
	if err := s.audit.Close(); err != nil {
		s.log.Warn("closing the audit log", "err", err)
	}
	if err := s.reg.Close(); err != nil {
		s.log.Warn("releasing identities", "err", err)
	}
	s.log.Info("shutdown complete")
}

// closeBackends stops the backend of every agent kind (the Codex child
// and each ACP backend's agents) at once, within one budget: a slow one
// (a child that ignores SIGTERM until its grace runs out) does not hold
// the others' stop back, and all of them are done, or given up on, when
// budget has passed.
func (s *Server) closeBackends(budget time.Duration) {
	ctx, stop := context.WithTimeout(context.Background(), budget)
	defer stop()
	closers := map[string]interface{ Close(context.Context) error }{registry.DefaultKind: s.backend}
	for kind, b := range s.opts.Agents {
		closers[kind] = b
	}
	var wg sync.WaitGroup
	for kind, b := range closers {
		wg.Go(func() {
			if err := b.Close(ctx); err != nil {
				s.log.Warn("stopping an agent kind's backend", "agent", kind, "err", err)
			}
		})
	}
	wg.Go(func() { s.hosts.closeBackends(ctx) })
	wg.Wait()
	// Then the hosts' connections: what this serve's agents left on a
	// host is stopped there first (hosts.go).
	s.hosts.close(ctx)
}

// Resume binds a previous session at start-up (serve --resume, FR-6):
// target "" is the most recent session of the instance identity (else of the
// registry), an agent_id, or an identity. Its summary is put before its
// first turn. It returns the resumed session's agent_id.
func (s *Server) Resume(target string) (string, error) {
	var rec registry.Session
	var ok bool
	switch {
	case target == "":
		if rec, ok = s.reg.MostRecent(s.opts.Identity); !ok {
			for _, r := range s.reg.List(registry.Filter{}) {
				if !ok || r.LastActive.After(rec.LastActive) {
					rec, ok = r, true
				}
			}
		}
	default:
		if rec, ok = s.reg.ByAgentID(target); !ok {
			rec, ok = s.reg.MostRecent(target)
		}
	}
	if !ok {
		if target == "" {
			return "", errors.New("--resume: this instance has no previous session")
		}
		var pe *proxyerr.Error
		if errors.As(s.sessions.Absent().NotFound(target), &pe) && pe.Data["owner_instance"] != nil {
			return "", errors.New("--resume: " + pe.Msg) // another instance's: which, and how to resume it
		}
		return "", errors.New("--resume: no session with agent_id or identity " + target)
	}
	sess := s.sessions.Get(rec.AgentID)
	if sess == nil {
		return "", errors.New("--resume: session " + rec.AgentID + " vanished")
	}
	if err := s.sessions.Rebind(sess, session.SourceResume); err != nil {
		return "", err
	}
	s.log.Info("resumed session", "agent_id", rec.AgentID, "identity", rec.Identity, "thread", rec.BackendID)
	return rec.AgentID, nil
}

// handler is the connection's Handler and Forwarder: tools/call goes to the
// tools; any other request goes to Codex where the backend passes MCP
// through (mcp-server), else it is METHOD_NOT_FOUND.
type handler struct{ s *Server }

func (h handler) CallTool(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	h.s.lead.callStarted() // while the lead waits, Claude Code keeps what is pushed (leadgate.go)
	defer h.s.lead.callEnded()
	res, err := h.s.tools.CallTool(ctx, c)
	err = h.s.configWarned.annotate(err, h.s.opts.ConfigWarnings)
	res, err = h.s.noticed.annotate(res, err, h.s.opts.Notices)
	if tools.EndsTurn(c.Name) && !errors.Is(err, mcpconn.ErrAnswered) {
		// The lead's mail from the turn goes first (leadpush.go), waited
		// for off the reader. A call answered already has nothing to
		// order.
		h.s.lead.flush(ctx, c.Release)
	}
	return res, err
}

// Forward sends a request the proxy does not handle to the Codex child
// verbatim and returns the child's reply.
func (h handler) Forward(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	pt := h.s.backend
	notFound := proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": m.Method}, "method not found: %s", m.Method)
	ctx, cancel := context.WithTimeout(ctx, h.s.opts.RequestTimeout)
	defer cancel()
	resp, err := pt.Forward(ctx, m)
	switch {
	case errors.Is(err, backend.ErrUnsupported):
		return nil, notFound
	case err != nil:
		return nil, codexError(err)
	case resp.Error != nil:
		return nil, &proxyerr.ChildError{Raw: resp.Error}
	}
	return resp, nil
}

// Notify passes a notification on to the child (mcp-server), on a goroutine
// of its own (the child's stdin may be full) that shutdown joins once the
// child is stopped; from then on notifications are dropped.
func (h handler) Notify(m *jsonrpcframe.Message) {
	pt := h.s.backend
	h.s.notifying.Go(func(ctx context.Context) {
		if err := pt.Notify(ctx, m); err != nil {
			h.s.log.Debug("notification not forwarded to codex", "method", m.Method, "err", err)
		}
	})
}
