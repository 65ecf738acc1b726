package codexchild

import "github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"

// The reader goroutine calls the backend.Flusher of each turn whose
// handler is one once it has delivered everything the child has written so
// far (see backend.Flusher).

// flushSet is the reader goroutine's list of the Flushers that have had
// events since it last waited; only that goroutine uses it.
type flushSet struct {
	turns []any // each Flusher's turn (a pointer), to note it once
	fs    []backend.Flusher
}

// note records that turn's handler h has had an event.
func (s *flushSet) note(turn any, h backend.Handler) {
	f, ok := h.(backend.Flusher)
	if !ok {
		return
	}
	for _, t := range s.turns {
		if t == turn {
			return
		}
	}
	s.turns = append(s.turns, turn)
	s.fs = append(s.fs, f)
}

// flush calls every noted Flusher and forgets them.
func (s *flushSet) flush() {
	for i, f := range s.fs {
		f.Flush()
		s.fs[i], s.turns[i] = nil, nil
	}
	s.fs, s.turns = s.fs[:0], s.turns[:0]
}
