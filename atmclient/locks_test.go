package atmclient

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
)

// A write takes both locks and releases both, also when it fails; it waits
// for either one held by another writer, within LockTimeout.
func TestInboxLocks(t *testing.T) {
	c, _ := newTestHome(t, "a")
	c.lockTimeout = 50 * time.Millisecond
	path := inboxPath(t, c, "dev", "a")
	dirLock, flockPath := path+".lock", strings.TrimSuffix(path, ".json")+".lock"

	// The inbox is created as [] before Claude Code's lock is taken.
	var sawDir, sawInbox bool
	setHook(t, func(step string) {
		if step == "journal" {
			_, err := os.Stat(dirLock)
			sawDir = err == nil
			b, _ := os.ReadFile(path)
			sawInbox = string(b) == "[]"
		}
	})
	send(t, c, "one")
	testHook = nil
	if !sawDir || !sawInbox {
		t.Errorf("during the first write: lock directory held %v, inbox created as [] %v; want both", sawDir, sawInbox)
	}

	// Held by another writer: the write waits, then gives up.
	for _, hold := range []string{"lock directory", "flock"} {
		var release func()
		if hold == "flock" {
			l, err := fsx.Lock(bg, flockPath, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			release = func() { l.Close() }
		} else {
			if err := os.Mkdir(dirLock, 0o700); err != nil {
				t.Fatal(err)
			}
			release = func() { os.Remove(dirLock) }
		}
		if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "x"}); !errors.Is(err, ErrLockTimeout) {
			t.Errorf("Send while another writer holds the %s: %v, want ErrLockTimeout", hold, err)
		}
		release()
	}

	// A failed write releases both.
	clobber(t, path, []byte(`{"not":"an array"}`))
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "x"}); !errors.Is(err, ErrCorruptInbox) {
		t.Fatalf("Send to a corrupt inbox: %v, want ErrCorruptInbox", err)
	}
	if _, err := os.Stat(dirLock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock directory after a failed write: %v, want it gone", err)
	}
	l, err := fsx.Lock(bg, flockPath, 0)
	if err != nil {
		t.Errorf("flock after a failed write: %v, want it free", err)
	} else {
		l.Close()
	}
}
