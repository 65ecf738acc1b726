package codexversion

import (
	"strconv"
	"strings"
)

// The Codex versions that matter (measured; docs/codex-wire.md).
const (
	// Oldest is the oldest Codex the backends drive: the supported floor.
	Oldest = "0.104.0"
	// TestedMCPServer is the Codex whose `codex mcp-server` make test runs:
	// the last release that has mcp-server (it was removed in 0.154.0), and
	// the oldest version tested.
	TestedMCPServer = "0.153.4"
	// TestedAppServer is the Codex whose `codex app-server` make test runs:
	// the newest version tested (the Makefile's CODEX_APP_VERSION).
	TestedAppServer = "0.171.0"
)

// Version is a parsed Codex version "MAJOR.MINOR.PATCH[-pre]".
type Version struct {
	Major, Minor, Patch int
	// Pre is the pre-release suffix without its "-" ("alpha.2"), or "".
	Pre string
}

// Parse reads "MAJOR.MINOR[.PATCH][-pre]". A missing patch is 0. ok is
// false when a number is missing or is not one.
func Parse(s string) (v Version, ok bool) {
	s, v.Pre, _ = strings.Cut(strings.TrimSpace(s), "-")
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, false
	}
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, false
		}
		*nums[i] = n
	}
	return v, true
}

// Compare returns -1, 0 or +1 as v is older than, the same as or newer
// than w. A pre-release is older than its release ("0.172.0-alpha.1" <
// "0.172.0"); two pre-releases of one release compare as strings.
func (v Version) Compare(w Version) int {
	for _, d := range []int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	switch {
	case v.Pre == w.Pre:
		return 0
	case v.Pre == "":
		return 1
	case w.Pre == "":
		return -1
	}
	return strings.Compare(v.Pre, w.Pre)
}

// Support says what is known of a Codex version.
type Support int

const (
	// Unknown: the version does not parse.
	Unknown Support = iota
	// TooOld: older than [Oldest]; the backends do not drive it.
	TooOld
	// OlderThanTested: from [Oldest], older than [TestedMCPServer]; driven,
	// but no longer tested.
	OlderThanTested
	// Tested: from [TestedMCPServer] to [TestedAppServer], the tested range
	// (tested, or between two tested versions).
	Tested
	// NewerThanTested: newer than [TestedAppServer]; driven, not yet
	// tested.
	NewerThanTested
)

// SupportOf says where version stands against the floor and the tested
// range.
func SupportOf(version string) Support {
	v, ok := Parse(version)
	if !ok {
		return Unknown
	}
	floor, _ := Parse(Oldest)
	lo, _ := Parse(TestedMCPServer)
	hi, _ := Parse(TestedAppServer)
	switch {
	case v.Compare(floor) < 0:
		return TooOld
	case v.Compare(lo) < 0:
		return OlderThanTested
	case v.Compare(hi) > 0:
		return NewerThanTested
	}
	return Tested
}
