package proxy

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// threadCPU returns the CPU time of the calling thread (zero when it cannot
// be read); the caller locks its goroutine to the thread.
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// captureEvents keeps a turn's events.
type captureEvents struct{ events []backend.Event }

func (h *captureEvents) Event(e backend.Event) { h.events = append(h.events, e) }
func (h *captureEvents) Approval(a *backend.Approval) {
	_ = a.Respond(backend.Decision{Kind: backend.Deny})
}

// benchCall is the request a benchmarked turn answers.
type benchCall struct{}

func (benchCall) RequestID() json.RawMessage                   { return json.RawMessage("7") }
func (benchCall) Progress(string)                              {}
func (benchCall) WantsProgress() bool                          { return true }
func (benchCall) Release()                                     {}
func (benchCall) TryReplyNow(*session.TurnResult, func()) bool { return false }

// BenchmarkForwardEvent is the proxy's side of one Codex event: the
// events of a mockcodex turn, as the backend hands them over, tagged and
// written to the client's pipe (drained by a goroutine). ns/op is per
// event. (What the session records of an event is BenchmarkActivityRecord
// in package session.)
func BenchmarkForwardEvent(b *testing.B) {
	bin := mockcodexBin(b)
	home := b.TempDir()
	ctx := context.Background()
	be := codexchild.NewMCPServer(codexchild.Config{Bin: bin, Dir: home, Env: []string{"CODEX_HOME=" + filepath.Join(home, ".codex")}})
	h := &captureEvents{}
	first, err := be.Turn(ctx, backend.TurnRequest{Prompt: "start", Params: backend.ThreadParams{Cwd: home}})
	if err == nil {
		_, err = be.Turn(ctx, backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "bench", Handler: h})
	}
	_ = be.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	inR, inW := io.Pipe()
	conn := mcpconn.New(mcpconn.Config{Handler: nil})
	conn.Start(inR, outW)
	b.Cleanup(func() { inW.Close(); <-conn.Done(); conn.Close(); outW.Close(); outR.Close() })
	sink := eventSink{conn}
	ids := session.IDs{AgentID: []byte(`"arch-0001"`), Identity: []byte(`"arch"`)}
	call := benchCall{}
	var size int
	for _, e := range h.events {
		size += len(e.Params)
	}
	b.SetBytes(int64(size / len(h.events)))
	b.ReportAllocs()
	// The events go out a turn at a time, then the client catches up (as
	// between turns) so that every event is written inline, as in a real
	// turn. ns/op includes that wait; cpu-ns/event is this thread's CPU
	// time in the events alone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	i := 0
	for b.Loop() {
		if i == 0 {
			for conn.Stats().Queued > 0 {
				runtime.Gosched()
			}
			cpu -= threadCPU()
		}
		e := h.events[i]
		sink.Event(e, e.Activity(), ids, call) // translated once, as the session's turn handler does
		if i++; i == len(h.events) {
			sink.Flush() // the turn's events are all read
			cpu += threadCPU()
			i = 0
		}
	}
	if i != 0 {
		cpu += threadCPU()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
	if n := conn.Stats().Dropped; n > 0 {
		b.Fatalf("%d events dropped", n)
	}
}
