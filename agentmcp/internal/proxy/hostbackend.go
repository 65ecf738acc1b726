package proxy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
)

// downSettle bounds how long a failed turn waits for its host's
// connection to be seen down: the agent's ssh and the master end together
// when the connection drops, in either order.
const downSettle = time.Second

// hostBackend is an agent kind's backend on a host: the kind's own
// backend, started through the host's ssh connection (its Config.Host),
// behind the host's availability. While the connection is down a turn,
// a new session and mail are refused at once (Unavailable, MailPaused)
// with what ssh said; a turn cut by a drop fails with an error naming
// the host and what ssh said. A kind whose one child runs every thread
// (Codex's app-server, a backend.WholeRestarter) gets a new child after
// its child died (make: on the next turn, or as soon as the host is back,
// reconnected); another kind starts each thread's agent again by itself.
// Either way the next turn continues the session's thread, which lives on
// the host (thread/resume, session/load or session/resume).
//
// Design notes: mu guards cur and closed; a child's close and a new
// one's making run outside it. What the sessions ask (the seam's
// capabilities) is asked of the current backend.
type hostBackend struct {
	kind string
	p    *hostPlace
	make func() (backend.Backend, error) // nil: cur restarts its agents itself
	log  *slog.Logger

	mu     sync.Mutex
	cur    backend.Backend // nil before the host is connected
	closed bool
}

// current returns the backend a call should use: the current one, or a
// new one in place of one whose child died (make), nil before connect.
func (b *hostBackend) current() (backend.Backend, error) {
	b.mu.Lock()
	cur, closed := b.cur, b.closed
	b.mu.Unlock()
	switch {
	case closed:
		return nil, backend.ErrClosed
	case b.make == nil || cur != nil && !childDead(cur):
		return cur, nil
	case cur == nil && b.p.conn() == nil:
		return nil, nil // not connected yet
	case cur == nil:
		return b.replace(nil, "its first child could not be made")
	}
	return b.replace(cur, "its child on the host died")
}

// replace puts a new backend in place of old, once (another caller may
// have replaced it already), and closes old.
func (b *hostBackend) replace(old backend.Backend, why string) (backend.Backend, error) {
	nb, err := b.make()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.closed || b.cur != old {
		cur := b.cur
		b.mu.Unlock()
		_ = nb.Close(context.Background()) // started nothing
		return cur, nil
	}
	b.cur = nb
	b.mu.Unlock()
	b.log.Info("a new child for the agents on the host", "why", why)
	if old != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = old.Close(ctx)
	}
	return nb, nil
}

// childDead reports whether b's child had started and has exited.
func childDead(b backend.Backend) bool {
	st := b.Status()
	return st.Started && !st.Running && st.Exit != nil
}

// Turn runs the turn on the host, at once refused while the host is
// down.
func (b *hostBackend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	if err := b.Unavailable(); err != nil {
		if req.Release != nil {
			req.Release()
		}
		return nil, err
	}
	if b.p.connecting() {
		if req.Release != nil {
			req.Release()
			req.Release = nil
		}
		if err := b.p.ready(ctx); err != nil {
			return nil, b.Unavailable() // the first attempt failed: in the host's words
		}
	}
	cur, err := b.current()
	if err == nil && cur == nil {
		if req.Release != nil {
			req.Release()
		}
		return nil, b.Unavailable() // not connected yet
	}
	if err != nil {
		if req.Release != nil {
			req.Release()
		}
		return nil, b.failed(err)
	}
	res, err := cur.Turn(ctx, req)
	b.p.checkForwards() // for the next turn, should one of this turn's tool calls have found the forward gone
	return res, b.failed(err)
}

// failed maps the failure of a call on the host: a child that died, a
// start that failed, when the host's connection is down (or goes down
// within downSettle), is the host's failure, in its words; anything else
// passes unchanged.
func (b *hostBackend) failed(err error) error {
	var ee *backend.ExitError
	if err == nil || !errors.As(err, &ee) && !errors.Is(err, backend.ErrHandshake) && !errors.Is(err, sshhost.ErrDown) {
		return err
	}
	conn := b.p.conn()
	deadline := time.Now().Add(downSettle)
	for conn != nil && conn.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var down error
	if conn != nil {
		down = conn.Err()
	}
	if down == nil && !errors.Is(err, sshhost.ErrDown) {
		return err // the agent died, not the connection: the kind's own words
	}
	if down == nil {
		down = err
	}
	data := map[string]any{"host": b.p.name, "agent": b.kind, "ssh": sshSaid(down)}
	if ee != nil {
		data["exit_code"] = ee.Status.Code
		if ee.Stderr != "" {
			data["stderr"] = ee.Stderr
		}
	}
	return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data,
		"%s on host %s: the ssh connection to the host was lost during the turn: %v; serve reconnects by itself (with backoff), and once the host is back the session continues on its thread (its next turn resumes it there)",
		b.kind, b.p.name, down)
}

// Unavailable is nil while the host's connection is up, or is being made
// for the first time (a turn waits for it); else the error that says so,
// what ssh said, and that serve reconnects by itself.
func (b *hostBackend) Unavailable() error {
	conn := b.p.conn()
	if conn == nil {
		return proxyerr.New(proxyerr.ErrChildProcessDead, map[string]any{"host": b.p.name, "agent": b.kind},
			"%s on host %s: serve has not connected to the host yet; call again in a moment", b.kind, b.p.name)
	}
	if b.p.connecting() {
		return nil
	}
	err := conn.Err()
	if err == nil {
		return nil
	}
	return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, map[string]any{"host": b.p.name, "agent": b.kind, "ssh": sshSaid(err)},
		"%s on host %s: the host is unreachable: %v; serve reconnects by itself (with backoff): call again once it is back (agent_status shows the hosts; atm-agent-mcp doctor checks them)",
		b.kind, b.p.name, err)
}

// MailPaused reports whether mail to the host's sessions must wait: while
// its connection is down (it is delivered once the host is back).
func (b *hostBackend) MailPaused() bool {
	conn := b.p.conn()
	return conn == nil || conn.Err() != nil
}

// sshSaid is what ssh said of a host's failure (its last stderr lines),
// else the failure itself.
func sshSaid(err error) string {
	var he *sshhost.Error
	if errors.As(err, &he) && he.Stderr != "" {
		return lastLines(he.Stderr)
	}
	return err.Error()
}

// reconnected runs once the host's connection is back after a drop: a
// dead child of a kind that runs every thread in one is replaced now, so
// that the sessions continue on it; it reports whether it was.
func (b *hostBackend) reconnected() bool {
	b.mu.Lock()
	cur, closed := b.cur, b.closed
	b.mu.Unlock()
	if closed || cur == nil || b.make == nil || !childDead(cur) {
		return false
	}
	nb, err := b.replace(cur, "the host's connection is back")
	if err != nil {
		b.log.Warn("no new child for the agents on the host", "err", err)
		return false
	}
	return nb != cur
}

func (b *hostBackend) Interrupt(ctx context.Context, threadID string) error {
	cur, err := b.current()
	if err != nil || cur == nil {
		return err
	}
	return cur.Interrupt(ctx, threadID)
}

func (b *hostBackend) Status() backend.Status {
	b.mu.Lock()
	cur := b.cur
	b.mu.Unlock()
	if cur == nil {
		return backend.Status{}
	}
	return cur.Status()
}

// Close stops the current backend's agents on the host.
func (b *hostBackend) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	cur := b.cur
	b.mu.Unlock()
	if cur == nil {
		return nil
	}
	return cur.Close(ctx)
}

// What the sessions ask of the kind's backend is asked of the current
// one (the kind's own answers: a new child answers alike).

func (b *hostBackend) now() backend.Backend {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

func (b *hostBackend) Sandboxed() bool       { return backend.IsSandboxed(b.now()) }
func (b *hostBackend) Settings() []string    { return backend.SettingsOf(b.now()) }
func (b *hostBackend) RestartsAsWhole() bool { return backend.RestartsAsWhole(b.now()) }
func (b *hostBackend) Name() string          { return backend.NameOf(b.now(), b.kind) }

func (b *hostBackend) Options(values map[string]any) any {
	if cf, ok := b.now().(backend.Configurable); ok {
		return cf.Options(values)
	}
	return nil
}

// Steer adds input to a running turn where the kind's backend can.
func (b *hostBackend) Steer(ctx context.Context, threadID, text string) error {
	if s, ok := b.now().(backend.Steerer); ok {
		return s.Steer(ctx, threadID, text)
	}
	return backend.ErrUnsupported
}

// Fork forks a thread on the host where the kind's backend can (Codex's
// app-server there: its threads are there); ErrUnsupported otherwise,
// and the fork is told the source's history instead.
func (b *hostBackend) Fork(ctx context.Context, req backend.ForkRequest) (*backend.ForkResult, error) {
	if err := b.Unavailable(); err != nil {
		return nil, err
	}
	if b.p.connecting() {
		if err := b.p.ready(ctx); err != nil {
			return nil, b.Unavailable()
		}
	}
	cur, err := b.current()
	if err != nil {
		return nil, b.failed(err)
	}
	if cur == nil {
		return nil, b.Unavailable() // not connected yet
	}
	f, ok := cur.(backend.Forker)
	if !ok {
		return nil, backend.ErrUnsupported
	}
	res, err := f.Fork(ctx, req)
	return res, b.failed(err)
}

// StructuredOutput asks the kind's backend there whether its turns take
// an output schema.
func (b *hostBackend) StructuredOutput(ctx context.Context) error {
	return backend.Structured(ctx, b.now())
}
