package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ports on a host (PortsConfig.Runner): the same directory, lock file and
// records as on this machine (ports.go), there, so that the agents a serve
// puts on a host and those of a serve that runs there never share a
// port. A reservation is two sh programs run through the Runner: the
// first lists the records (and the user's uid there), this process
// judges their owners (only owners on this machine can be judged: see
// Owner.alive) and picks a block; the second, under the lock of
// ports.lock there (flock(1), the flock(2) lock a serve there takes; a
// lock directory ports.lock.d where the host has no flock), removes this
// user's records of dead owners, checks that no record overlaps the block
// (one made meanwhile sends it back to the first), and creates the new
// record with noclobber. Nothing is bind-probed there: the records alone
// keep the blocks apart. Files are tested not to be symbolic links, FIFOs
// or oversized before they are read, as the local side opens them.

// shTaken is the exit status of shPortsTake when a record overlaps the
// block.
const shTaken = 3

// hostPortsTimeout bounds one program of the ports on a host.
const hostPortsTimeout = 30 * time.Second

// shPortsDir starts every program: $1 the directory ("" means
// $ATM_PORTS_DIR there, else SharedPortsDir), $2 "1" when an explicit
// directory is the shared one. It makes or checks the directory (a real
// directory, ours or sticky and world-writable), sets the umask of the
// records, and leaves the directory in $d.
const shPortsDir = `if [ -n "$1" ]; then d=$1 shared=$2
elif [ -n "${ATM_PORTS_DIR:-}" ]; then d=$ATM_PORTS_DIR shared=
else d=` + sharedPortsPath + ` shared=1; fi
if [ -L "$d" ]; then echo "$d is a symbolic link: refused" >&2; exit 1; fi
if [ ! -d "$d" ]; then
  mkdir -p "${d%/*}" 2>/dev/null
  if [ -n "$shared" ]; then (umask 0; mkdir -m 1777 "$d") 2>/dev/null; else mkdir -m 700 "$d" 2>/dev/null; fi
fi
if [ -L "$d" ] || [ ! -d "$d" ]; then echo "$d is not a directory" >&2; exit 1; fi
if [ ! -O "$d" ]; then
  case $(ls -ld "$d") in
  d???????w[tT]*) [ -n "$shared" ] || { echo "$d belongs to another user and is not ours" >&2; exit 1; };;
  *) echo "$d belongs to another user and is not a shared directory (sticky, world-writable): refused" >&2; exit 1;;
  esac
fi
if [ -n "$shared" ]; then umask 022; else umask 077; fi
`

// shPortsList prints the user's uid there, then each record's name and
// content (at most 4 KiB, NUL bytes dropped), each NUL-terminated.
const shPortsList = shPortsDir + `printf '%s\0' "$(id -u)"
for f in "$d"/*-*-*-*.json; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  printf '%s\0' "${f##*/}"
  head -c 4096 "$f" | tr -d '\000'
  printf '\0'
done`

// shPortsTake: $3 the new record's name, then -<name> for each record to
// remove first (this user's, of dead owners) and +<name> for each to
// disregard (dead owners' that are not this user's); the record's content
// on stdin. Exit 3: a record overlaps the block.
const shPortsTake = shPortsDir + `name=$3; shift 3
if [ -L "$d/ports.lock" ]; then echo "$d/ports.lock is a symbolic link: refused" >&2; exit 1; fi
if command -v flock >/dev/null 2>&1; then
  [ -e "$d/ports.lock" ] || : >>"$d/ports.lock" || exit 1
  exec 9<"$d/ports.lock" && flock -x 9 || exit 1
else
  until mkdir "$d/ports.lock.d" 2>/dev/null; do sleep 1; done
  trap 'rmdir "$d/ports.lock.d"' EXIT
fi
skip=
for a do
  case $a in -*) rm -f "$d/${a#-}";; +*) skip="$skip/${a#+}/";; esac
done
b=${name%%-*} r=${name#*-}; c=${r%%-*}
for f in "$d"/*-*-*-*.json; do
  [ -f "$f" ] || continue
  n=${f##*/}
  case $skip in *"/$n/"*) continue;; esac
  ob=${n%%-*} r=${n#*-}; oc=${r%%-*}
  case "$ob$oc" in ""|*[!0-9]*) continue;; esac
  if [ "$b" -lt $((ob + oc)) ] && [ "$ob" -lt $((b + c)) ]; then echo "$n" >&2; exit 3; fi
done
(set -C; cat >"$d/$name") || exit 1`

// shPortsRemove removes the record $3.
const shPortsRemove = shPortsDir + `rm -f "$d/$3"`

// sharedPortsPath is SharedPortsDir's path, on any host.
const sharedPortsPath = "/tmp/atm-agent-mcp-ports"

// hostRun runs one of the programs there.
func (p *Ports) hostRun(program, op string, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hostPortsTimeout)
	defer cancel()
	shared := ""
	if p.cfg.Shared {
		shared = "1"
	}
	var stdout, stderr bytes.Buffer
	c := &Command{Dir: "/", Name: "sh", Args: append([]string{"-c", program, "atm-agent-mcp-ports-" + op, p.cfg.Dir, shared}, args...),
		Stdout: &stdout, Stderr: &stderr}
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	if err := p.cfg.Runner.Run(ctx, c); err != nil {
		return stdout.Bytes(), &shError{op: "ports " + op, args: args, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// hostList reads the records there: every one (live or not, mine or not)
// and the user's uid there.
func (p *Ports) hostList() ([]Reservation, int, error) {
	out, err := p.hostRun(shPortsList, "list", nil)
	if err != nil {
		return nil, 0, fmt.Errorf("workspace: ports: %w", err)
	}
	f := splitNUL(out)
	if len(f) == 0 {
		return nil, 0, errors.New("workspace: ports: the host did not say its uid")
	}
	uid, err := strconv.Atoi(strings.TrimSpace(f[0]))
	if err != nil {
		return nil, 0, fmt.Errorf("workspace: ports: the host's uid %q", f[0])
	}
	var rs []Reservation
	for i := 1; i+1 < len(f); i += 2 {
		name, body := f[i], f[i+1]
		var base, count, ruid, pid int
		if n, _ := fmt.Sscanf(name, "%d-%d-%d-%d.json", &base, &count, &ruid, &pid); n != 4 || name != recordName(base, count, ruid, pid) {
			continue
		}
		var r Reservation
		if json.Unmarshal([]byte(body), &r) != nil || r.Base != base || r.Count != count || r.PID != pid {
			continue
		}
		r.file, r.mine = name, ruid == uid
		rs = append(rs, r)
	}
	return rs, uid, nil
}

// hostReserve is Reserve on the host.
func (p *Ports) hostReserve(count int, tag string) (PortBlock, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for try := 0; try < 5; try++ {
		all, uid, err := p.hostList()
		if err != nil {
			return PortBlock{}, err
		}
		var live []Reservation
		var args []string
		for _, r := range all {
			switch {
			case (Owner{PID: r.PID, Start: r.Start, Host: r.Host}).alive(p.cfg.Owner):
				live = append(live, r)
			case r.mine:
				args = append(args, "-"+r.file)
			default:
				args = append(args, "+"+r.file)
			}
		}
		var b PortBlock
		for base := p.cfg.First; base+count-1 <= p.cfg.Last; base += count {
			if c := (PortBlock{Base: base, Count: count}); !overlaps(c, live) {
				b = c
				break
			}
		}
		if b.Count == 0 {
			return PortBlock{}, fmt.Errorf("workspace: ports: no free block of %d in %d-%d on the host", count, p.cfg.First, p.cfg.Last)
		}
		o := p.cfg.Owner
		rec, err := json.Marshal(Reservation{PortBlock: b, PID: o.PID, Start: o.Start, Host: o.Host, Tag: tag, Since: p.cfg.Now().UTC()})
		if err != nil {
			return PortBlock{}, err
		}
		name := recordName(b.Base, b.Count, uid, o.PID)
		_, err = p.hostRun(shPortsTake, "take", rec, append([]string{name}, args...)...)
		if status(err) == shTaken {
			continue // a record made meanwhile holds some of it
		}
		if err != nil {
			return PortBlock{}, fmt.Errorf("workspace: ports: %w", err)
		}
		p.hostUID, p.hostUIDKnown = uid, true
		return b, nil
	}
	return PortBlock{}, errors.New("workspace: ports: the records on the host kept changing")
}

// hostRelease is Release on the host: this process's record of b goes.
func (p *Ports) hostRelease(b PortBlock) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.hostUIDKnown {
		return nil // nothing reserved here
	}
	if _, err := p.hostRun(shPortsRemove, "remove", nil, recordName(b.Base, b.Count, p.hostUID, p.cfg.Owner.PID)); err != nil {
		return fmt.Errorf("workspace: ports: %w", err)
	}
	return nil
}

// hostLive is List on the host: the live reservations.
func (p *Ports) hostLive() ([]Reservation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	all, _, err := p.hostList()
	if err != nil {
		return nil, err
	}
	var live []Reservation
	for _, r := range all {
		if (Owner{PID: r.PID, Start: r.Start, Host: r.Host}).alive(p.cfg.Owner) {
			live = append(live, r)
		}
	}
	return live, nil
}
