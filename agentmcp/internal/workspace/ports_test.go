package workspace

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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
	fi, err := os.Stat(filepath.Join(dir, "ports.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ports.json: %v, %v", fi, err)
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
	var f portsFile
	b, _ := os.ReadFile(filepath.Join(dir, "ports.json"))
	if err := json.Unmarshal(b, &f); err != nil || len(f.Reservations) != 20 {
		t.Errorf("ports.json holds %d reservations (%v)", len(f.Reservations), err)
	}
}
