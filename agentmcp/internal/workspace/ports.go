package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Ports: machine-wide blocks of free ports, one per isolated session, so
// that the dev servers and databases of parallel agents never collide
// (hash-derived ports collide about 5% of the time at 10 worktrees). Every
// serve of every user on the machine reserves in one state directory
// (SharedPortsDir), under an flock of its ports.lock: a block is chosen
// that no live reservation overlaps and that can be bound now, and
// reserved by a record file of its own, <base>-<count>-<uid>-<pid>.json,
// holding its owner (pid, process start time, host) and tag. Released at
// Release by removing the record; a record whose owner is gone counts as
// free, and is removed by the next serve of its user.
//
// The shared directory is like /tmp: world-writable with the sticky bit
// (01777), so that a user can remove only their own records. Nothing in
// it is followed: the directory must be a real directory (not a symbolic
// link), files are opened with O_NOFOLLOW (and O_NONBLOCK, so a FIFO
// cannot hang us) and must be regular files; records are created with
// O_EXCL and read up to 4 KiB. The lock file is only ever opened for
// reading (an flock needs no more), and is checked, once locked, to be
// still the file its path names (a cleaner of /tmp may have removed it).
// What another user can do there is what they can do in /tmp: make a
// record that keeps a block from us, or, owning the directory, remove
// ours; the bind probe still keeps us off a port in use. A directory
// that is neither ours nor sticky and world-writable is refused.

// SharedPortsDir is the machine-wide state directory of the port
// reservations (on /tmp itself, not $TMPDIR, which can be per user).
var SharedPortsDir = sharedPortsPath

// PortBlock is a block of consecutive ports: Base … Base+Count-1.
type PortBlock struct {
	Base  int `json:"base"`
	Count int `json:"count"`
}

// PortsConfig configures Ports.
type PortsConfig struct {
	// Dir is the state directory holding ports.lock and the records, made
	// at the first reservation (so that a serve that isolates no agent
	// leaves nothing there). required, but on a host (Runner), where ""
	// means $ATM_PORTS_DIR there, else SharedPortsDir there (shared).
	Dir string
	// Shared makes Dir the machine-wide directory (SharedPortsDir): made
	// 01777, records readable by all (0644). optional: false makes it
	// private (0700, records 0600): one user's serves only, as tests use.
	Shared bool
	// First and Last bound the ports handed out. optional: 0 means 20000
	// and 29999 (below Linux's ephemeral range, above the usual dev ports).
	First, Last int
	// Owner is who holds the reservations. optional: zero means Self().
	Owner Owner
	// Now is the clock. optional: nil means time.Now.
	Now func() time.Time
	// Runner, when set, runs on the host whose ports are reserved (a
	// host's runner, over ssh): the directory is there, and so are its
	// lock and records, handled by sh programs there (ports_host.go); a
	// block is not bind-probed there. optional: nil is this machine.
	Runner Runner
}

// Ports reserves blocks of ports. Its methods are safe for concurrent use
// (and for use by other processes: all state is in the directory, under
// its lock). An flock excludes other open files of ports.lock, not the
// goroutines sharing one: mu does that, taken before it.
type Ports struct {
	cfg PortsConfig
	uid int
	mu  sync.Mutex // held around the flock (on a host: around each reservation, and guards hostUID)

	hostUID      int  // on a host: the user's uid there, once a reservation said it
	hostUIDKnown bool // hostUID is known
}

// Reservation is one reserved block and who holds it.
type Reservation struct {
	PortBlock
	PID   int       `json:"pid"`
	Start string    `json:"start,omitempty"`
	Host  string    `json:"host,omitempty"`
	Tag   string    `json:"tag,omitempty"` // the agent_id
	Since time.Time `json:"since"`

	file string // the record's name
	mine bool   // the record file is this user's (it can be removed)
}

// NewPorts returns Ports keeping its state in cfg.Dir.
func NewPorts(cfg PortsConfig) (*Ports, error) {
	if cfg.Dir == "" && cfg.Runner == nil {
		return nil, errors.New("workspace: ports: Dir is required")
	}
	if cfg.First == 0 {
		cfg.First = 20000
	}
	if cfg.Last == 0 {
		cfg.Last = 29999
	}
	if cfg.First < 1 || cfg.Last > 65535 || cfg.First > cfg.Last {
		return nil, fmt.Errorf("workspace: ports: bad range %d-%d", cfg.First, cfg.Last)
	}
	if cfg.Owner == (Owner{}) {
		cfg.Owner = Self()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Ports{cfg: cfg, uid: os.Getuid()}, nil
}

// withLock runs fn on the live reservations under the directory's lock,
// this user's records of dead owners removed first; fn's error is
// returned as it is.
func (p *Ports) withLock(fn func(live []Reservation) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensureDir(); err != nil {
		return fmt.Errorf("workspace: ports: %w", err)
	}
	unlock, err := p.lock()
	if err != nil {
		return fmt.Errorf("workspace: ports: lock: %w", err)
	}
	defer unlock()
	all, err := p.read()
	if err != nil {
		return fmt.Errorf("workspace: ports: %w", err)
	}
	live := all[:0]
	for _, r := range all {
		if (Owner{PID: r.PID, Start: r.Start, Host: r.Host}).alive(p.cfg.Owner) {
			live = append(live, r)
		} else if r.mine {
			os.Remove(filepath.Join(p.cfg.Dir, r.file))
		}
	}
	return fn(live)
}

// ensureDir makes the state directory, or checks the one there: a real
// directory, ours or (shared) sticky and world-writable.
func (p *Ports) ensureDir() error {
	d := p.cfg.Dir
	mode := os.FileMode(0o700)
	if p.cfg.Shared {
		mode = 0o777 | os.ModeSticky
	}
	if err := os.MkdirAll(filepath.Dir(d), 0o700); err != nil {
		return err
	}
	switch err := os.Mkdir(d, mode); {
	case err == nil:
		if err := os.Chmod(d, mode); err != nil { // past the umask
			return err
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symbolic link is refused)", d)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == p.uid {
		return nil
	}
	if !p.cfg.Shared || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm()&0o002 == 0 {
		return fmt.Errorf("%s belongs to uid %d and is not a shared directory (sticky, world-writable): refused", d, st.Uid)
	}
	return nil
}

// lock takes the flock of ports.lock, the file its path names.
func (p *Ports) lock() (unlock func(), err error) {
	path := filepath.Join(p.cfg.Dir, "ports.lock")
	for try := 0; try < 5; try++ {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, p.fileMode())
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), path)
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		if sameFile(f, path) {
			return func() { syscall.Flock(fd, syscall.LOCK_UN); f.Close() }, nil
		}
		f.Close() // removed or replaced while we waited: lock the new one
	}
	return nil, errors.New("the lock file keeps being replaced")
}

func (p *Ports) fileMode() uint32 {
	if p.cfg.Shared {
		return 0o644
	}
	return 0o600
}

// read returns every record in the directory; files that are not records
// (other names, links, FIFOs, oversized or unreadable ones) are skipped.
func (p *Ports) read() ([]Reservation, error) {
	ents, err := os.ReadDir(p.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var rs []Reservation
	for _, e := range ents {
		var base, count, uid, pid int
		if n, _ := fmt.Sscanf(e.Name(), "%d-%d-%d-%d.json", &base, &count, &uid, &pid); n != 4 ||
			e.Name() != recordName(base, count, uid, pid) || !e.Type().IsRegular() {
			continue
		}
		r, ok := readRecord(filepath.Join(p.cfg.Dir, e.Name()))
		if !ok || r.Base != base || r.Count != count || r.PID != pid {
			continue
		}
		r.file, r.mine = e.Name(), uid == p.uid
		rs = append(rs, r)
	}
	return rs, nil
}

func recordName(base, count, uid, pid int) string {
	return fmt.Sprintf("%d-%d-%d-%d.json", base, count, uid, pid)
}

// readRecord reads a record without following a link or blocking on a
// FIFO, up to 4 KiB.
func readRecord(path string) (Reservation, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Reservation{}, false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return Reservation{}, false
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	var r Reservation
	if err != nil || json.Unmarshal(b, &r) != nil {
		return Reservation{}, false
	}
	return r, true
}

// Reserve finds count consecutive ports that no live reservation holds and
// that can be bound now, and reserves them for this process, tagged (an
// agent_id).
func (p *Ports) Reserve(count int, tag string) (PortBlock, error) {
	if count < 1 || count > p.cfg.Last-p.cfg.First+1 {
		return PortBlock{}, fmt.Errorf("workspace: ports: cannot reserve %d ports in %d-%d", count, p.cfg.First, p.cfg.Last)
	}
	if p.cfg.Runner != nil {
		return p.hostReserve(count, tag)
	}
	var got PortBlock
	err := p.withLock(func(live []Reservation) error {
		for base := p.cfg.First; base+count-1 <= p.cfg.Last; base += count {
			b := PortBlock{Base: base, Count: count}
			if overlaps(b, live) || !bindable(b) {
				continue
			}
			o := p.cfg.Owner
			r := Reservation{PortBlock: b, PID: o.PID, Start: o.Start, Host: o.Host, Tag: tag, Since: p.cfg.Now().UTC()}
			if err := p.write(r); err != nil {
				return fmt.Errorf("workspace: ports: %w", err)
			}
			got = b
			return nil
		}
		return fmt.Errorf("workspace: ports: no free block of %d in %d-%d", count, p.cfg.First, p.cfg.Last)
	})
	return got, err
}

// write creates r's record (O_EXCL: never over another file).
func (p *Ports) write(r Reservation) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := filepath.Join(p.cfg.Dir, recordName(r.Base, r.Count, p.uid, r.PID))
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, p.fileMode())
	if err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Chmod(fs.FileMode(p.fileMode())); err != nil { // past the umask
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// Release frees a block this process reserved.
func (p *Ports) Release(b PortBlock) error {
	if p.cfg.Runner != nil {
		return p.hostRelease(b)
	}
	return p.withLock(func(live []Reservation) error {
		for _, r := range live {
			if r.PortBlock == b && r.mine && (Owner{PID: r.PID, Start: r.Start, Host: r.Host}).same(p.cfg.Owner) {
				if err := os.Remove(filepath.Join(p.cfg.Dir, r.file)); err != nil {
					return fmt.Errorf("workspace: ports: %w", err)
				}
				return nil
			}
		}
		return nil
	})
}

// List returns the live reservations (removing this user's dead ones).
func (p *Ports) List() ([]Reservation, error) {
	if p.cfg.Runner != nil {
		return p.hostLive()
	}
	var res []Reservation
	err := p.withLock(func(live []Reservation) error {
		res = append(res, live...)
		return nil
	})
	return res, err
}

// overlaps reports whether b shares a port with a reservation.
func overlaps(b PortBlock, rs []Reservation) bool {
	for _, r := range rs {
		if b.Base < r.Base+r.Count && r.Base < b.Base+b.Count {
			return true
		}
	}
	return false
}

// bindable reports whether every port of b can be listened on now, on all
// interfaces and on loopback (a dev server binds either).
func bindable(b PortBlock) bool {
	for port := b.Base; port < b.Base+b.Count; port++ {
		for _, host := range []string{"", "127.0.0.1"} {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return false
			}
			l.Close()
		}
	}
	return true
}
