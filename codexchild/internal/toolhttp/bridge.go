package toolhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// bridge is one tool server behind an endpoint: its stdio process here,
// and the requests waiting for its answers (renumbered, so that requests
// of several HTTP clients cannot collide).
type bridge struct {
	spec  backend.ToolServer
	token string
	log   *slog.Logger

	mu      sync.Mutex
	proc    *toolProc
	next    int64
	pending map[int64]chan *jsonrpcframe.Message
}

// toolProc is a running tool server process, supervised as every child
// is (childproc: its own process group, stderr to the log).
type toolProc struct {
	proc *childproc.Process
	w    jsonrpcframe.Writer
	wmu  sync.Mutex
	done chan struct{} // closed when its stdout ended
}

// running returns the live process, starting one when there is none.
// Called with b.mu held.
func (b *bridge) running() (*toolProc, error) {
	if p := b.proc; p != nil {
		select {
		case <-p.done:
		default:
			return p, nil
		}
	}
	var added []string
	for _, k := range slices.Sorted(maps.Keys(b.spec.Env)) {
		added = append(added, k+"="+b.spec.Env[k])
	}
	proc, err := childproc.Start(childproc.Config{
		Name:  "tool server " + b.spec.Name,
		Spec:  childproc.Spec{Path: b.spec.Command, Args: b.spec.Args, Env: append(os.Environ(), added...), AddEnv: added},
		Grace: time.Second, Logger: b.log,
	})
	if err != nil {
		return nil, fmt.Errorf("starting tool server %s: %w", b.spec.Name, err)
	}
	p := &toolProc{proc: proc, w: jsonrpcframe.NewLineWriter(proc), done: make(chan struct{})}
	b.proc = p
	if b.pending == nil {
		b.pending = map[int64]chan *jsonrpcframe.Message{}
	}
	go b.read(p)
	return p, nil
}

// read delivers the process's answers; its requests and notifications to
// the client are answered or dropped (no stream to send them on).
func (b *bridge) read(p *toolProc) {
	defer func() {
		p.proc.StdoutDone()
		close(p.done)
	}()
	r := jsonrpcframe.NewLineReader(p.proc.Stdout(), nil)
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
			b.mu.Lock()
			ch := b.pending[n]
			delete(b.pending, n)
			b.mu.Unlock()
			if ok && ch != nil {
				ch <- m
			}
		case jsonrpcframe.KindRequest:
			e, _ := json.Marshal(map[string]any{"code": jsonrpcframe.CodeMethodNotFound, "message": "method not found: " + m.Method})
			p.write(&jsonrpcframe.Message{Versioned: true, ID: m.ID, Error: e})
		}
	}
}

func (p *toolProc) write(m *jsonrpcframe.Message) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.w.Write(m)
}

// send passes a notification or a response on.
func (b *bridge) send(m *jsonrpcframe.Message) error {
	b.mu.Lock()
	p, err := b.running()
	b.mu.Unlock()
	if err != nil {
		return err
	}
	return p.write(m)
}

// call passes a request on and returns its response with the caller's id.
func (b *bridge) call(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	b.mu.Lock()
	p, err := b.running()
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	b.next++
	n := b.next
	ch := make(chan *jsonrpcframe.Message, 1)
	b.pending[n] = ch
	b.mu.Unlock()
	fwd := *m
	fwd.ID = jsonrpcframe.IntID(n)
	if err := p.write(&fwd); err != nil {
		b.forget(n)
		return nil, fmt.Errorf("tool server %s: %w", b.spec.Name, err)
	}
	select {
	case resp := <-ch:
		out := *resp
		out.ID = m.ID
		return &out, nil
	case <-p.done:
		b.forget(n)
		return nil, fmt.Errorf("tool server %s exited", b.spec.Name)
	case <-ctx.Done():
		b.forget(n)
		return nil, fmt.Errorf("tool server %s: no answer: %w", b.spec.Name, ctx.Err())
	}
}

func (b *bridge) forget(n int64) {
	b.mu.Lock()
	delete(b.pending, n)
	b.mu.Unlock()
}

// stop ends the process: stdin closed, SIGTERM to its group a second
// later, SIGKILL a second after that.
func (b *bridge) stop() {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.proc.Stop(context.Background())
	<-p.done
}
