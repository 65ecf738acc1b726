package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"time"
)

// A shared radar's state of a repository on a host is the same two files
// as here (radarstore.go), in the repository's common git directory
// there: radar.lock, held with the host's lock (files.lock: flock(1)
// where the host has it, else a lock directory) around every read and
// write, and radar.json, replaced whole (writeFileAtomic) when it
// changed. So the agents that every serve runs in that repository are
// compared, whichever machine each serve runs on, as they are here.
//
// It costs a look three commands over the host's connection (the lock's,
// which lasts the compare; the read; the write when something changed),
// after a look that read the worktree's whole change there anyway (no
// file watch reaches over ssh), and it runs after the turn has ended, in
// the radar's own goroutine; a listing of the overlaps (agent_status)
// reads the state as of this radar's last look there, never the host. An
// agent's owner is judged alive as here
// (Owner.alive): one on another machine than the reader's never dropped
// by it, but by a serve of that machine.

// hostRadarTimeout bounds one read-compare-write of a host's state.
const hostRadarTimeout = 30 * time.Second

// hostRadarFile is one repository's shared state on a host.
type hostRadarFile struct {
	dir  string      // the state's directory there: <common>/atm
	fs   files       // the host's
	last *radarState // the state as last read or written there (Radar.viewState)
}

// with runs fn on the state under the host's lock, as radarFile.with
// does. A state that cannot be locked, read or written leaves fn
// comparing with nothing and the files as they were.
func (f *hostRadarFile) with(self Owner, fn func(st *radarState) bool) {
	ctx, cancel := context.WithTimeout(context.Background(), hostRadarTimeout)
	defer cancel()
	if err := f.fs.mkdirAll(ctx, f.dir); err != nil {
		fn(newRadarState())
		return
	}
	unlock, err := f.fs.lock(ctx, path.Join(f.dir, "radar.lock"))
	if err != nil {
		fn(newRadarState())
		return
	}
	defer unlock()
	b, err := f.fs.readFile(ctx, path.Join(f.dir, "radar.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fn(newRadarState())
		return
	}
	st := parseState(b)
	changed := dropGone(st, self)
	if !fn(st) && !changed {
		f.last = st
		return
	}
	if b, err = json.Marshal(st); err != nil {
		return
	}
	if f.fs.writeFileAtomic(ctx, path.Join(f.dir, "radar.json"), b, 0o600) == nil {
		f.last = st
	}
}
