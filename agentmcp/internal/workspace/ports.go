package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Ports: machine-wide blocks of free ports, one per isolated session, so
// that the dev servers and databases of parallel agents never collide
// (hash-derived ports collide about 5% of the time at 10 worktrees). The
// reservations of every serve on the machine are in one file, ports.json,
// in a state directory, read and written only under an flock of the
// sidecar ports.lock (never replaced; ports.json is replaced by rename).
// A block is bind-probed before it is handed out, and a reservation whose
// owner process is gone is reclaimed by the next Reserve.

// PortBlock is a block of consecutive ports: Base … Base+Count-1.
type PortBlock struct {
	Base  int `json:"base"`
	Count int `json:"count"`
}

// PortsConfig configures Ports.
type PortsConfig struct {
	// Dir is the machine-wide state directory holding ports.json and
	// ports.lock (made 0700 at the first reservation, so that a serve that
	// isolates no agent leaves nothing there). required.
	Dir string
	// First and Last bound the ports handed out. optional: 0 means 20000
	// and 29999 (below Linux's ephemeral range, above the usual dev ports).
	First, Last int
	// Owner is who holds the reservations. optional: zero means Self().
	Owner Owner
	// Now is the clock. optional: nil means time.Now.
	Now func() time.Time
}

// Ports reserves blocks of ports. Its methods are safe for concurrent use
// (and for use by other processes: all state is in the file, under its
// lock). An flock excludes other open files of ports.lock, not the
// goroutines sharing one: mu does that, taken before it.
type Ports struct {
	cfg  PortsConfig
	mu   sync.Mutex // held around lock
	lock *flock.Flock
}

// Reservation is one reserved block and who holds it.
type Reservation struct {
	PortBlock
	PID   int       `json:"pid"`
	Start string    `json:"start,omitempty"`
	Host  string    `json:"host,omitempty"`
	Tag   string    `json:"tag,omitempty"` // the agent_id
	Since time.Time `json:"since"`
}

type portsFile struct {
	Reservations []Reservation `json:"reservations"`
}

// NewPorts returns Ports keeping its state in cfg.Dir.
func NewPorts(cfg PortsConfig) (*Ports, error) {
	if cfg.Dir == "" {
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
	return &Ports{cfg: cfg, lock: flock.New(filepath.Join(cfg.Dir, "ports.lock"))}, nil
}

func (p *Ports) path() string { return filepath.Join(p.cfg.Dir, "ports.json") }

// withFile runs fn on the reservations under the lock, dropping those whose
// owner is gone first, and writes them back when fn reports a change.
func (p *Ports) withFile(fn func(f *portsFile) (changed bool, err error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(p.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("workspace: ports: %w", err)
	}
	if err := p.lock.Lock(); err != nil {
		return fmt.Errorf("workspace: ports: lock: %w", err)
	}
	defer p.lock.Unlock()
	var f portsFile
	b, err := os.ReadFile(p.path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("workspace: ports: %w", err)
	default:
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("workspace: ports: %s: %w", p.path(), err)
		}
	}
	live := f.Reservations[:0]
	for _, r := range f.Reservations {
		if (Owner{PID: r.PID, Start: r.Start, Host: r.Host}).alive(p.cfg.Owner) {
			live = append(live, r)
		}
	}
	reclaimed := len(live) != len(f.Reservations)
	f.Reservations = live
	changed, err := fn(&f)
	if err != nil || !changed && !reclaimed {
		return err
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(p.path(), out, 0o600)
}

// Reserve finds count consecutive ports that no live reservation holds and
// that can be bound now, and reserves them for this process, tagged (an
// agent_id).
func (p *Ports) Reserve(count int, tag string) (PortBlock, error) {
	if count < 1 || count > p.cfg.Last-p.cfg.First+1 {
		return PortBlock{}, fmt.Errorf("workspace: ports: cannot reserve %d ports in %d-%d", count, p.cfg.First, p.cfg.Last)
	}
	var got PortBlock
	err := p.withFile(func(f *portsFile) (bool, error) {
		for base := p.cfg.First; base+count-1 <= p.cfg.Last; base += count {
			b := PortBlock{Base: base, Count: count}
			if overlaps(b, f.Reservations) || !bindable(b) {
				continue
			}
			o := p.cfg.Owner
			f.Reservations = append(f.Reservations, Reservation{PortBlock: b, PID: o.PID, Start: o.Start, Host: o.Host,
				Tag: tag, Since: p.cfg.Now().UTC()})
			got = b
			return true, nil
		}
		return false, fmt.Errorf("workspace: ports: no free block of %d in %d-%d", count, p.cfg.First, p.cfg.Last)
	})
	return got, err
}

// Release frees a block this process reserved.
func (p *Ports) Release(b PortBlock) error {
	return p.withFile(func(f *portsFile) (bool, error) {
		for i, r := range f.Reservations {
			if r.PortBlock == b && (Owner{PID: r.PID, Start: r.Start, Host: r.Host}).same(p.cfg.Owner) {
				f.Reservations = append(f.Reservations[:i], f.Reservations[i+1:]...)
				return true, nil
			}
		}
		return false, nil
	})
}

// List returns the live reservations (reclaiming the dead ones).
func (p *Ports) List() ([]Reservation, error) {
	var res []Reservation
	err := p.withFile(func(f *portsFile) (bool, error) {
		res = append(res, f.Reservations...)
		return false, nil
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
