package registry

import (
	"regexp"
	"testing"
	"time"
)

func TestNewAgentID(t *testing.T) {
	format := regexp.MustCompile(`^codex-[0-9a-hjkmnp-tv-z]{26}$`)
	seen := make(map[string]bool)
	prev := ""
	for range 2000 {
		id := NewAgentID()
		if !format.MatchString(id) {
			t.Fatalf("NewAgentID() = %q, not codex- + 26 lower-case Crockford digits", id)
		}
		if err := ValidateAgentID(id); err != nil {
			t.Fatalf("NewAgentID() = %q: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("NewAgentID() repeated %q", id)
		}
		seen[id] = true
		// The time prefix (10 digits) never goes backwards.
		if prev != "" && id[:16] < prev[:16] {
			t.Fatalf("id %q sorts before the earlier %q", id, prev)
		}
		prev = id
	}
	// The time prefix encodes the current millisecond.
	before := time.Now().UnixMilli()
	id := NewAgentID()
	var ms int64
	for _, c := range id[6:16] {
		ms = ms<<5 | int64(indexCrockford(byte(c)))
	}
	if after := time.Now().UnixMilli(); ms < before || ms > after {
		t.Errorf("id %q encodes %d ms, want within [%d, %d]", id, ms, before, after)
	}
}

func indexCrockford(c byte) int {
	for i := range len(crockford) {
		if crockford[i] == c {
			return i
		}
	}
	return -1
}
