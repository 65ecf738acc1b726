package workspace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A shared radar's state of one repository is two files in its common git
// directory, in atm/ (made 0700; an agent's sandbox never makes it
// writable, see WritableRoots):
//
//   - radar.lock, flock-ed around every read and write of the state by
//     every serve, and never replaced. It holds the state's generation, a
//     number each writer increments, so that a radar that wrote the state
//     last does not read and parse it again (the radar runs after every
//     ended turn).
//   - radar.json, the state (radarState), rewritten in place under the
//     lock. Unsynced: a state torn by a crash reads as empty, and the
//     worst that follows is an overlap told again.
//
// Both are kept open between looks. When either path names another file
// than the one held (someone removed the directory), both are opened
// again.

// radarStateVersion is the version of radar.json this code writes; a
// state of another version reads as empty.
const radarStateVersion = 1

func newRadarState() *radarState {
	return &radarState{Version: radarStateVersion, Agents: map[string]*radarEntry{}}
}

// radarFile is one repository's shared state, kept open.
type radarFile struct {
	dir         string
	lock, state *os.File
	gen         uint64      // the generation st is of
	st          *radarState // the state as this radar last read or wrote it
}

// with runs fn on the state under the lock, the agents whose owner is gone
// (seen from self) dropped first, and writes it back when fn or the
// dropping changed it. A state that cannot be read or written leaves fn
// comparing with nothing and the file as it was.
func (f *radarFile) with(self Owner, fn func(st *radarState) bool) {
	if err := f.lockFiles(); err != nil {
		fn(newRadarState())
		return
	}
	defer syscall.Flock(int(f.lock.Fd()), syscall.LOCK_UN)
	gen := f.readGen()
	st := f.st
	if st == nil || gen != f.gen {
		st = f.readState()
	}
	f.st = nil // until written back
	changed := dropGone(st, self)
	if !fn(st) && !changed {
		f.st, f.gen = st, gen
		return
	}
	b, err := json.Marshal(st)
	if err != nil {
		return
	}
	if _, err := f.state.WriteAt(b, 0); err != nil {
		return
	}
	if err := f.state.Truncate(int64(len(b))); err != nil {
		return
	}
	gen++
	if _, err := f.lock.WriteAt([]byte(strconv.FormatUint(gen, 10)+"\n"), 0); err != nil {
		return
	}
	f.st, f.gen = st, gen
}

// dropGone drops the agents of st whose owner is gone (seen from self)
// and what was told about them; it reports whether it dropped any.
func dropGone(st *radarState, self Owner) bool {
	changed := false
	alive := map[Owner]bool{}
	for a, e := range st.Agents {
		if e == nil {
			delete(st.Agents, a)
			changed = true
			continue
		}
		live, ok := alive[e.Owner]
		if !ok {
			live = e.Owner.alive(self)
			alive[e.Owner] = live
		}
		if !live {
			delete(st.Agents, a)
			dropTold(st, a)
			changed = true
		}
	}
	return changed
}

// parseState reads a state (empty when torn or of another version).
func parseState(b []byte) *radarState {
	st := &radarState{}
	if len(b) == 0 || json.Unmarshal(b, st) != nil || st.Version != radarStateVersion {
		return newRadarState()
	}
	if st.Agents == nil {
		st.Agents = map[string]*radarEntry{}
	}
	return st
}

// lockFiles opens the files (again, when their paths name others now)
// and takes the flock of the one the lock's path names.
func (f *radarFile) lockFiles() error {
	for try := 0; try < 3; try++ {
		if f.lock == nil || !sameFile(f.lock, filepath.Join(f.dir, "radar.lock")) ||
			!sameFile(f.state, filepath.Join(f.dir, "radar.json")) {
			f.close()
			if err := f.open(); err != nil {
				return err
			}
		}
		if err := syscall.Flock(int(f.lock.Fd()), syscall.LOCK_EX); err != nil {
			return err
		}
		if sameFile(f.lock, filepath.Join(f.dir, "radar.lock")) {
			return nil
		}
		syscall.Flock(int(f.lock.Fd()), syscall.LOCK_UN) // replaced while we waited
	}
	return errors.New("workspace: the radar's lock file keeps being replaced")
}

func (f *radarFile) open() error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(f.dir, "radar.lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	state, err := os.OpenFile(filepath.Join(f.dir, "radar.json"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		lock.Close()
		return err
	}
	f.lock, f.state, f.st = lock, state, nil
	return nil
}

func (f *radarFile) close() {
	if f.lock != nil {
		f.lock.Close()
		f.state.Close()
	}
	f.lock, f.state, f.st = nil, nil, nil
}

// readGen reads the generation from the lock file (0 when none).
func (f *radarFile) readGen() uint64 {
	var b [32]byte
	n, _ := f.lock.ReadAt(b[:], 0)
	g, _ := strconv.ParseUint(strings.TrimSpace(string(b[:n])), 10, 64)
	return g
}

// readState reads the state (empty when missing, torn or of another
// version).
func (f *radarFile) readState() *radarState {
	fi, err := f.state.Stat()
	if err != nil || fi.Size() == 0 || fi.Size() > 64<<20 {
		return newRadarState()
	}
	b := make([]byte, fi.Size())
	if _, err := f.state.ReadAt(b, 0); err != nil {
		return newRadarState()
	}
	return parseState(b)
}

// sameFile reports whether path names the open file f.
func sameFile(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
