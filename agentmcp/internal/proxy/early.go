package proxy

import (
	"context"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// earlyAnswer lets a codex-reply be answered from the Codex reader the
// moment Codex's result arrives (codexchild's TurnRequest.OnResult): the
// session records the turn and moves on (idle, or its next queued turn
// starts), then the answer is written, with no hand-off to the goroutine
// that runs the turn. The client gains more than that hand-off: the answer
// follows the turn's last event closely enough to be read while the client
// is still waking up for that event, instead of after one more wake-up.
//
// It applies only where it needs no file I/O and no waiting, else the
// turn's goroutine answers as usual: the thread id is the session's
// already (a new one is persisted at once), nothing is queued for the
// client and its pipe takes the answer now.
type earlyAnswer struct {
	call *toolCall
	// Set by enqueue.
	ctx  context.Context // the client's request
	j    *job
	done func(*toolResult, error)
	// stopCancel unhooks the turn from the client's request (set by the
	// job before the turn starts). The request ends once it is answered;
	// the hook would then start a goroutine only to cancel a turn that has
	// already finished.
	stopCancel func() bool

	answered atomic.Bool // the job is finished and the answer out
	idle     bool        // what finishing the job reported; read after answered
}

// earlyAnswers counts the turns answered from the Codex reader (tests).
var earlyAnswers atomic.Int64

// answerEarly runs on the Codex reader with the turn's result; it answers
// the client, or leaves the turn to its goroutine.
func (s *Server) answerEarly(e *earlyAnswer, sess *session, kind codexchild.Kind, in turnInput, res *codexchild.Result) {
	if e.done == nil || e.ctx.Err() != nil {
		return
	}
	rec := sess.snapshot()
	if res.ThreadID != "" && res.ThreadID != rec.BackendID {
		return
	}
	text := s.capResult(rec.AgentID, res.Text)
	tr := turnResult(rec, res, text)
	m, err := jsonrpcframe.NewResponse(e.call.id, resultJSON(tr))
	if err != nil || !s.client.reserve(len(m.Result)+len(m.ID.Raw())+64) {
		return
	}
	s.recordTurn(sess, kind, false, in, res, text)
	e.idle = sess.finish(e.j)
	e.call.answer = m
	if e.stopCancel != nil {
		e.stopCancel()
	}
	earlyAnswers.Add(1)
	e.done(tr, nil) // finishToolCall writes the answer
	e.answered.Store(true)
}
