package codexchild

// A Flusher is a [Handler] that passes a turn's events on in batches, say
// one write to its own client for several events. The backend calls Flush
// on its reader goroutine once it has delivered everything the child has
// written so far, before it waits for more of the child's output, and when
// that output ends: an event is never held back while the reader has
// nothing else to do. Every Flusher that has had an event since the
// reader's last wait gets one call; it may come after the turn's Turn call
// has returned. Like the other Handler methods, Flush must not block.
type Flusher interface {
	Flush()
}

// flushSet is the reader goroutine's list of the Flushers that have had
// events since it last waited; only that goroutine uses it.
type flushSet struct {
	turns []any // each Flusher's turn (a pointer), to note it once
	fs    []Flusher
}

// note records that turn's handler h has had an event.
func (s *flushSet) note(turn any, h Handler) {
	f, ok := h.(Flusher)
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
