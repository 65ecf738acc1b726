package ccmsg_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
)

// recorder is a stand-in for Claude Code's messaging socket: it accepts
// connections and records every line it reads, one slice per connection.
type recorder struct {
	path  string
	ln    net.Listener
	mu    sync.Mutex
	conns [][]map[string]any
	got   chan struct{} // one value per connection read to its end
	wg    sync.WaitGroup
}

func newRecorder(t testing.TB) *recorder {
	t.Helper()
	dir, err := os.MkdirTemp("", "ccmsg") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &recorder{path: filepath.Join(dir, "s.sock"), got: make(chan struct{}, 1024)}
	if r.ln, err = net.Listen("unix", r.path); err != nil {
		t.Fatal(err)
	}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *recorder) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer c.Close()
			var lines []map[string]any
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				var m map[string]any
				if json.Unmarshal(sc.Bytes(), &m) != nil {
					m = map[string]any{"invalid": sc.Text()}
				}
				lines = append(lines, m)
			}
			r.mu.Lock()
			r.conns = append(r.conns, lines)
			r.mu.Unlock()
			r.got <- struct{}{}
		}()
	}
}

func (r *recorder) close() {
	r.ln.Close()
	r.wg.Wait()
}

func (r *recorder) wait(t testing.TB) [][]map[string]any {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(5 * time.Second):
		t.Fatal("no connection ended")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]map[string]any(nil), r.conns...)
}

func TestSend(t *testing.T) {
	leakcheck.Check(t, "ccmsg.")
	user := func(content string, extra map[string]any) map[string]any {
		m := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		token string
		msgs  []ccmsg.Message
		want  []map[string]any
	}{
		{"auth then one line", "tok-1", []ccmsg.Message{{Content: "Team mail from codex1: done <ok> & more"}},
			[]map[string]any{{"type": "auth", "token": "tok-1"}, user("Team mail from codex1: done <ok> & more", nil)}},
		{"optional fields, in order", "t", []ccmsg.Message{{Content: "a", From: "codex1", MsgID: "m-1", Priority: "now"}, {Content: "b"}},
			[]map[string]any{{"type": "auth", "token": "t"}, user("a", map[string]any{"from": "codex1", "msg_id": "m-1", "priority": "now"}), user("b", nil)}},
		{"no token, no auth line", "", []ccmsg.Message{{Content: "x\ny"}},
			[]map[string]any{user("x\ny", nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t)
			c, err := ccmsg.New(ccmsg.Config{Socket: r.path, Token: tc.token})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Send(context.Background(), tc.msgs...); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := r.wait(t)
			if diff := cmp.Diff([][]map[string]any{tc.want}, got); diff != "" {
				t.Errorf("lines on the socket (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSendRefused: a missing socket, a socket nobody listens on, an empty
// message and a cancelled context are errors; nothing is sent as if it
// went through.
func TestSendRefused(t *testing.T) {
	leakcheck.Check(t, "ccmsg.")
	if _, err := ccmsg.New(ccmsg.Config{}); !errors.Is(err, ccmsg.ErrNoSocket) {
		t.Errorf("New without a socket: %v, want ErrNoSocket", err)
	}
	r := newRecorder(t)
	gone, _ := ccmsg.New(ccmsg.Config{Socket: filepath.Join(filepath.Dir(r.path), "missing.sock"), Token: "t"})
	if err := gone.Send(context.Background(), ccmsg.Message{Content: "x"}); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("missing socket: %v, want ENOENT", err)
	}
	r.ln.(*net.UnixListener).SetUnlinkOnClose(false) // a socket file nobody listens on
	r.close()
	closed, _ := ccmsg.New(ccmsg.Config{Socket: r.path, Token: "t"})
	if err := closed.Send(context.Background(), ccmsg.Message{Content: "x"}); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("nobody listening: %v, want ECONNREFUSED", err)
	}
	if err := closed.Send(context.Background(), ccmsg.Message{}); err == nil {
		t.Error("empty content: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := closed.Send(ctx, ccmsg.Message{Content: "x"}); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestSendLingerOpenPeer: a peer that reads but keeps its side open does
// not make Send fail or wait longer than Linger.
func TestSendLingerOpenPeer(t *testing.T) {
	dir, err := os.MkdirTemp("", "ccmsg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			held <- c
		}
	}()
	c, _ := ccmsg.New(ccmsg.Config{Socket: path, Linger: 50 * time.Millisecond})
	start := time.Now()
	if err := c.Send(context.Background(), ccmsg.Message{Content: "x"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Send took %v with a 50ms linger", d)
	}
	(<-held).Close()
}
