package workspace

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// freeRange returns a range of n ports that nothing listens on now.
func freeRange(t *testing.T, n int) (int, int) {
	t.Helper()
	for first := 41000; first < 60000; first += n {
		if bindable(PortBlock{Base: first, Count: n}) {
			return first, first + n - 1
		}
	}
	t.Fatal("no free port range")
	return 0, 0
}

func TestPortsReserveRelease(t *testing.T) {
	dir := tempDir(t)
	first, last := freeRange(t, 40)
	p, err := NewPorts(PortsConfig{Dir: dir, First: first, Last: last})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else listens on the second block's third port.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first+12))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := p.Reserve(10, "codex-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Reserve(10, "codex-b")
	if err != nil {
		t.Fatal(err)
	}
	want := []PortBlock{{first, 10}, {first + 20, 10}}
	if got := []PortBlock{a, b}; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("blocks %v, want %v (the busy block skipped)", got, want)
	}
	if err := p.Release(a); err != nil {
		t.Fatal(err)
	}
	c, err := p.Reserve(10, "codex-c")
	if err != nil || c != a {
		t.Fatalf("after a release: %v, %v; want the freed %v", c, err, a)
	}
	if _, err := p.Reserve(10, "codex-d"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reserve(10, "codex-e"); err == nil {
		t.Fatal("a full range gave a block")
	}
	for _, b := range []PortBlock{a, b} {
		fi, err := os.Stat(filepath.Join(dir, recordName(b.Base, b.Count, os.Getuid(), os.Getpid())))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the record of %v: %v, %v", b, fi, err)
		}
	}
}

func TestPortsReclaimDeadOwners(t *testing.T) {
	dir := tempDir(t)
	first, last := freeRange(t, 20)
	dead := deadOwner(t)
	p1, _ := NewPorts(PortsConfig{Dir: dir, First: first, Last: last, Owner: dead})
	if _, err := p1.Reserve(10, "codex-dead"); err != nil {
		t.Fatal(err)
	}
	live := liveOwner(t)
	p2, _ := NewPorts(PortsConfig{Dir: dir, First: first, Last: last, Owner: live})
	b, err := p2.Reserve(10, "codex-live")
	if err != nil || b.Base != first {
		t.Fatalf("Reserve: %v, %v; want the dead owner's block at %d", b, err, first)
	}
	rs, err := p2.List()
	if err != nil || len(rs) != 1 || rs[0].PID != live.PID || rs[0].Tag != "codex-live" {
		t.Fatalf("reservations %+v, %v", rs, err)
	}
	// A reused pid (same pid, another start time) is not the owner.
	reused := live
	reused.Start = "1"
	p3, _ := NewPorts(PortsConfig{Dir: dir, First: first, Last: last, Owner: reused})
	if err := p3.Release(b); err != nil {
		t.Fatal(err)
	}
	if rs, _ := p2.List(); len(rs) != 1 {
		t.Errorf("a release by another process freed the block: %+v", rs)
	}
}

func TestPortsConcurrent(t *testing.T) {
	dir := tempDir(t)
	first, last := freeRange(t, 200)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for i := range 4 { // four serves …
		p, err := NewPorts(PortsConfig{Dir: dir, First: first, Last: last})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 5 { // … of five sessions each
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := p.Reserve(10, "codex-"+strconv.Itoa(i*10+j))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for port := b.Base; port < b.Base+b.Count; port++ {
					got[port]++
				}
			}()
		}
	}
	wg.Wait()
	if len(got) != 200 {
		t.Errorf("%d distinct ports for 20 blocks of 10", len(got))
	}
	for port, n := range got {
		if n != 1 {
			t.Errorf("port %d handed out %d times", port, n)
		}
	}
	recs, _ := filepath.Glob(filepath.Join(dir, "*-10-*.json"))
	if len(recs) != 20 {
		t.Errorf("%d records for 20 reservations", len(recs))
	}
}

// TestPortsSharedDir: the machine-wide directory is made like /tmp
// (01777, records 0644); what is not a record of ours is never followed,
// opened for writing or removed: a symbolic link or a FIFO named as a
// record is skipped (no hang), a record of another user whose owner is
// gone counts as free but stays, and a directory that is a link, or
// another user's without the sticky bit, is refused.
func TestPortsSharedDir(t *testing.T) {
	first, last := freeRange(t, 30)
	root := tempDir(t)
	dir := filepath.Join(root, "shared")
	p, err := NewPorts(PortsConfig{Dir: dir, Shared: true, First: first, Last: last})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(); err != nil { // makes the directory
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("shared dir mode %v, %v; want sticky 0777", fi.Mode(), err)
	}
	// Traps named as records of the first two blocks.
	secret := filepath.Join(root, "secret")
	os.WriteFile(secret, []byte(`{"base":0}`), 0o600)
	os.Symlink(secret, filepath.Join(dir, recordName(first, 10, 4242, 1)))
	if err := syscall.Mkfifo(filepath.Join(dir, recordName(first+10, 10, 4242, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := p.Reserve(10, "codex-a")
	if err != nil || b.Base != first {
		t.Fatalf("Reserve: %v, %v; want %d (the traps are no reservations)", b, err, first)
	}
	rec := filepath.Join(dir, recordName(b.Base, 10, os.Getuid(), os.Getpid()))
	if fi, err := os.Lstat(rec); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("record: %v, %v; want 0644", fi, err)
	}
	if s, _ := os.ReadFile(secret); string(s) != `{"base":0}` {
		t.Errorf("a linked file was written: %q", s)
	}

	// Another user's record, its owner gone: free, but not ours to remove.
	if os.Getuid() == 0 {
		other := filepath.Join(dir, recordName(first+20, 10, 4242, 3))
		dead := deadOwner(t)
		os.WriteFile(other, []byte(`{"base":`+strconv.Itoa(first+20)+`,"count":10,"pid":3,"start":"1","host":"`+dead.Host+`"}`), 0o644)
		os.Chown(other, 4242, 4242)
		if err := p.Release(b); err != nil {
			t.Fatal(err)
		}
		p.Reserve(10, "codex-b") // first again
		c, err := p.Reserve(10, "codex-c")
		if err != nil || c.Base != first+10 {
			t.Fatalf("Reserve: %v, %v; want %d", c, err, first+10)
		}
		d, err := p.Reserve(10, "codex-d")
		if err != nil || d.Base != first+20 {
			t.Fatalf("Reserve over a dead record of another user: %v, %v; want %d", d, err, first+20)
		}
		if !exists(other) {
			t.Error("another user's record was removed")
		}
	}

	// Refused directories.
	link := filepath.Join(root, "link")
	os.Symlink(dir, link)
	if _, err := mustPorts(t, link).Reserve(10, "x"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a linked directory: %v", err)
	}
	if os.Getuid() == 0 {
		foreign := filepath.Join(root, "foreign")
		os.Mkdir(foreign, 0o777)
		os.Chmod(foreign, 0o777)
		os.Chown(foreign, 4242, 4242)
		if _, err := mustPorts(t, foreign).Reserve(10, "x"); err == nil || !strings.Contains(err.Error(), "not a shared directory") {
			t.Errorf("another user's directory without the sticky bit: %v", err)
		}
	}
}

func mustPorts(t *testing.T, dir string) *Ports {
	t.Helper()
	p, err := NewPorts(PortsConfig{Dir: dir, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
