package registry

import (
	"crypto/rand"
	"time"
)

// crockford is Crockford's base32 alphabet in lower case: no i, l, o, u, so
// ids survive case-insensitive file systems and are easy to read aloud.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewAgentID returns a new agent_id for a session of DefaultKind: "codex-" followed
// by a lower-case ULID (48-bit millisecond time, 80 random bits, 26
// characters). Ids of one kind sort by creation time, are unique without
// coordination and are safe file names on every platform.
func NewAgentID() string { return NewAgentIDFor(DefaultKind) }

// NewAgentIDFor returns a new agent_id for a session of the agent kind
// kind: kind, "-", then a ULID as in [NewAgentID] ("claude-01k…"). kind
// should be a valid agent kind name (a lower-case letter, then letters,
// digits, - or _); [Registry.Add] uses the session's Backend.
func NewAgentIDFor(kind string) string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	rand.Read(b[6:])
	// 128 bits as 26 base32 digits, most significant first; the first digit
	// carries the top 3 bits.
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	lo := uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 |
		uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return kind + "-" + string(out[:])
}
