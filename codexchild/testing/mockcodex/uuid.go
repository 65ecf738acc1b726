package mockcodex

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
)

var (
	uuidMu   sync.Mutex
	uuidLast int64
)

// newUUIDv7 returns a time-ordered UUID (version 7) as Codex uses for thread,
// turn and item ids.
func newUUIDv7() string {
	uuidMu.Lock()
	ms := time.Now().UnixMilli()
	if ms <= uuidLast {
		ms = uuidLast // keep order within a millisecond; randomness breaks ties
	}
	uuidLast = ms
	uuidMu.Unlock()
	var b [16]byte
	_, _ = rand.Read(b[6:])
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// parseUUID validates a thread id the way the Rust uuid crate does and
// returns its canonical hyphenated lower-case form, or the crate's error
// text.
func parseUUID(s string) (string, error) {
	in := s
	s = strings.TrimPrefix(s, "urn:uuid:")
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	for i, r := range in {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			if strings.HasPrefix(in, "urn:uuid:") && i < len("urn:uuid:") || r == '{' && i == 0 || r == '}' && i == len(in)-1 {
				continue
			}
			return "", fmt.Errorf("invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%c` at %d", r, i+1)
		}
	}
	groups := strings.Split(s, "-")
	switch {
	case len(groups) == 1:
		if len(s) != 32 {
			return "", fmt.Errorf("invalid length: expected length 32 for simple format, found %d", len(s))
		}
		s = s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
	case len(groups) != 5:
		return "", fmt.Errorf("invalid group count: expected 5, found %d", len(groups))
	default:
		want := []int{8, 4, 4, 4, 12}
		for i, g := range groups {
			if len(g) != want[i] {
				return "", fmt.Errorf("invalid group length in group %d: expected %d, found %d", i, want[i], len(g))
			}
		}
	}
	return strings.ToLower(s), nil
}
