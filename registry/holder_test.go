package registry

import (
	"os"
	"testing"
)

// TestHolder: a held claim names its holder; a released one, or one never
// made, has none.
func TestHolder(t *testing.T) {
	d, err := TeamDir(t.TempDir(), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := d.Holder("arch"); ok {
		t.Errorf("no claim yet: got %+v", h)
	}
	c, err := d.Claim("arch", "codex-1")
	if err != nil {
		t.Fatal(err)
	}
	h, ok := d.Holder("arch")
	if !ok || h.PID != os.Getpid() || h.AgentID != "codex-1" || h.Since.IsZero() {
		t.Errorf("held: got %+v, %v; want pid %d, agent codex-1", h, ok, os.Getpid())
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if h, ok := d.Holder("arch"); ok {
		t.Errorf("released: got %+v", h)
	}
	if _, ok := d.Holder("../x"); ok {
		t.Error("an invalid identity has a holder")
	}
}
