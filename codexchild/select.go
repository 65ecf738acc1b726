package codexchild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// KindAuto makes New pick the protocol the Codex binary offers.
const KindAuto Kind = "auto"

// probeTimeout bounds each probe command of the auto selection.
const probeTimeout = 15 * time.Second

// New returns the backend cfg.Kind names: NewMCPServer for KindMCPServer,
// NewAppServer for KindAppServer, and for KindAuto (or "") a backend that
// decides once, at its first use, by probing the binary (see probeKind),
// logs the choice and the Codex version, and then behaves exactly as the
// chosen backend. Nothing is started by New: a missing binary fails the
// first call, as it does for the other backends.
func New(cfg Config) (backend.Backend, error) {
	if cfg.Host != nil && cfg.Kind != KindAppServer {
		return nil, fmt.Errorf("codexchild: on host %s Codex runs as app-server only (Kind %q)", cfg.Host.Name(), cfg.Kind)
	}
	switch cfg.Kind {
	case KindMCPServer:
		return NewMCPServer(cfg), nil
	case KindAppServer:
		return NewAppServer(cfg), nil
	case KindAuto, "":
		return &autoBackend{cfg: cfg, log: cfg.logger().With("component", "codexchild", "backend", string(KindAuto))}, nil
	}
	return nil, fmt.Errorf("codexchild: unknown backend kind %q (want auto, mcp-server or app-server)", cfg.Kind)
}

// autoBackend is the Backend of KindAuto: it probes the binary on first use
// and then delegates to the chosen backend.
type autoBackend struct {
	Codex // what the seam asks of every Codex backend (options.go)
	cfg   Config
	log   *slog.Logger

	mu      sync.Mutex
	decided chan struct{} // closed when b is set; nil before the probe started
	b       backend.Backend
	version string // the probed version
	closed  bool
}

var (
	_ backend.Backend             = (*autoBackend)(nil)
	_ backend.Configurable        = (*autoBackend)(nil)
	_ backend.WholeRestarter      = (*autoBackend)(nil)
	_ Passthrough                 = (*autoBackend)(nil)
	_ backend.Steerer             = (*autoBackend)(nil)
	_ backend.Forker              = (*autoBackend)(nil)
	_ backend.StructuredOutputter = (*autoBackend)(nil)
	_ backend.Starter             = (*autoBackend)(nil)
	_ backend.Starter             = (*MCPServer)(nil)
	_ backend.Starter             = (*AppServer)(nil)
)

// backend returns the chosen backend, probing once; callers wait for the
// probe until ctx ends.
func (a *autoBackend) backend(ctx context.Context) (backend.Backend, error) {
	a.mu.Lock()
	if a.closed && a.decided == nil {
		a.mu.Unlock()
		return nil, backend.ErrClosed
	}
	if a.decided == nil {
		a.decided = make(chan struct{})
		go a.decide()
	}
	done := a.decided
	a.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return a.b, nil
}

// decide probes the binary and builds the backend; it closes decided.
func (a *autoBackend) decide() {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	kind, version, how := probeKind(ctx, a.cfg)
	a.log.Info("codex backend chosen", "kind", string(kind), "version", version, "bin", a.cfg.Bin, "by", how)
	var b backend.Backend
	if kind == KindMCPServer {
		m := NewMCPServer(a.cfg)
		m.version = version
		b = m
	} else {
		s := NewAppServer(a.cfg)
		s.version = version
		b = s
	}
	a.mu.Lock()
	a.b, a.version = b, version
	a.mu.Unlock()
	close(a.decided)
}

// Start probes the binary and starts the chosen backend's child now (see
// the backends' Start).
func (a *autoBackend) Start(ctx context.Context) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	if s, ok := b.(backend.Starter); ok {
		return s.Start(ctx)
	}
	return nil
}

// Kind reports the chosen protocol, or KindAuto before the first use has
// decided it. It never blocks.
func (a *autoBackend) Kind() Kind {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.b == nil {
		return KindAuto
	}
	return Kind(a.b.Status().Protocol)
}

func (a *autoBackend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	a.mu.Lock()
	chosen := a.b != nil
	a.mu.Unlock()
	if !chosen && req.Release != nil {
		r := req.Release
		req.Release = nil
		r() // the probe takes a while
	}
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	return b.Turn(ctx, req)
}

func (a *autoBackend) Interrupt(ctx context.Context, threadID string) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	return b.Interrupt(ctx, threadID)
}

// Steer adds input to a running turn on app-server; ErrUnsupported on
// mcp-server.
func (a *autoBackend) Steer(ctx context.Context, threadID, text string) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	s, ok := b.(backend.Steerer)
	if !ok {
		return fmt.Errorf("codexchild: steer: %w", backend.ErrUnsupported)
	}
	return s.Steer(ctx, threadID, text)
}

// Fork forks a thread on app-server; ErrUnsupported on mcp-server.
func (a *autoBackend) Fork(ctx context.Context, req backend.ForkRequest) (*backend.ForkResult, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	f, ok := b.(backend.Forker)
	if !ok {
		return nil, fmt.Errorf("codexchild: fork: %w", backend.ErrUnsupported)
	}
	return f.Fork(ctx, req)
}

// Forward passes a request to an mcp-server child; ErrUnsupported on
// app-server.
func (a *autoBackend) Forward(ctx context.Context, req *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	p, ok := b.(Passthrough)
	if !ok {
		return nil, fmt.Errorf("codexchild: forward %s: %w", req.Method, backend.ErrUnsupported)
	}
	return p.Forward(ctx, req)
}

// Notify passes a notification to an mcp-server child; ErrUnsupported on
// app-server.
func (a *autoBackend) Notify(ctx context.Context, n *jsonrpcframe.Message) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	p, ok := b.(Passthrough)
	if !ok {
		return fmt.Errorf("codexchild: notify %s: %w", n.Method, backend.ErrUnsupported)
	}
	return p.Notify(ctx, n)
}

// Status reports the chosen backend's status; before the choice, a child
// that has not started, of KindAuto (no probe is run for it).
func (a *autoBackend) Status() backend.Status {
	a.mu.Lock()
	b := a.b
	a.mu.Unlock()
	if b == nil {
		return backend.Status{Protocol: string(KindAuto)}
	}
	return b.Status()
}

// Close closes the chosen backend (waiting for a probe in progress); a
// backend never used is only marked closed.
func (a *autoBackend) Close(ctx context.Context) error {
	a.mu.Lock()
	a.closed = true
	done := a.decided
	a.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return a.b.Close(ctx)
}

// mcpServerUsage matches the usage line of `codex mcp-server --help`. Codex
// 0.154 and later print the top-level help for it (and exit 0: measured on
// 0.169.0 and 0.171.0, which read "mcp-server" as a prompt), so the exit
// code alone proves nothing.
var mcpServerUsage = regexp.MustCompile(`(?m)^Usage:.*\smcp-server\b`)

// probeKind decides the protocol of cfg.Bin. `codex --version` ("codex-cli
// 0.171.0") decides when it parses: mcp-server up to 0.153.x (it was removed
// in 0.154.0), app-server from 0.154. Otherwise `codex mcp-server --help`
// decides: mcp-server if it prints that subcommand's usage. When neither
// works (a missing binary, say) the answer is app-server, the protocol of
// every current Codex; the start then reports the real problem. how says
// which probe decided, for the log.
func probeKind(ctx context.Context, cfg Config) (kind Kind, version, how string) {
	out, err := probeRun(ctx, cfg, "--version")
	if err == nil {
		if f := bytes.Fields(out); len(f) > 0 {
			version = string(f[len(f)-1])
		}
	}
	if major, minor, ok := parseVersion(version); ok {
		if major == 0 && minor <= 153 {
			return KindMCPServer, version, "--version"
		}
		return KindAppServer, version, "--version"
	}
	help, herr := probeRun(ctx, cfg, "mcp-server", "--help")
	switch {
	case herr == nil && mcpServerUsage.Match(help):
		return KindMCPServer, version, "mcp-server --help"
	case herr == nil:
		return KindAppServer, version, "mcp-server --help"
	}
	return KindAppServer, version, fmt.Sprintf("default (probes failed: %v; %v)", err, herr)
}

// probeRun runs the binary with args in the child's environment and
// returns its stdout; its process group is killed when ctx ends.
func probeRun(ctx context.Context, cfg Config, args ...string) ([]byte, error) {
	out, err := childproc.Output(ctx, childproc.Config{
		Name: "codex probe", Spec: childproc.Spec{Path: cfg.Bin, Args: args, Env: cfg.env(), AddEnv: cfg.Env, Dir: cfg.Dir},
		Grace: time.Second, Logger: cfg.logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s %v: %w", cfg.Bin, args, err)
	}
	return out, nil
}

// Tools returns an mcp-server child's tools/list result; ErrUnsupported on
// app-server.
func (a *autoBackend) Tools(ctx context.Context) (json.RawMessage, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	m, ok := b.(*MCPServer)
	if !ok {
		return nil, fmt.Errorf("codexchild: tools/list: %w", backend.ErrUnsupported)
	}
	return m.Tools(ctx)
}
