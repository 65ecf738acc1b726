package atmclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLength is the longest team, agent or identity name accepted, in
// bytes. Longer names are rejected before they reach a path.
const MaxNameLength = 128

// ErrInvalidName is wrapped by every name validation error.
var ErrInvalidName = errors.New("invalid name")

// ValidateName reports whether name is safe to use as one path component for
// a team, agent or identity. kind names what is validated ("team", "agent",
// "identity") and appears in the error. Empty names, names containing '/',
// '\\', NUL, control or invisible formatting characters (bidi overrides,
// zero-width), names that are or contain "..", names with
// leading or trailing spaces, invalid UTF-8 and names longer than
// MaxNameLength bytes are rejected with an error wrapping ErrInvalidName.
func ValidateName(kind, name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s %q %s", ErrInvalidName, kind, name, why)
	}
	switch {
	case name == "":
		return fmt.Errorf("%w: %s name is empty", ErrInvalidName, kind)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: %s name is %d bytes, longer than the limit of %d", ErrInvalidName, kind, len(name), MaxNameLength)
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case name == ".":
		return bad("is not a name")
	case strings.Contains(name, ".."):
		return bad(`contains ".."`)
	case strings.ContainsAny(name, `/\`):
		return bad("contains a path separator")
	case strings.TrimSpace(name) != name:
		return bad("has leading or trailing white space")
	}
	for _, r := range name {
		if r == 0 || unicode.IsControl(r) {
			return bad("contains a NUL or control character")
		}
		if unicode.Is(unicode.Cf, r) {
			// Bidi overrides and zero-width characters make two names look
			// alike (U+202E shows "abc" as "cba").
			return bad(fmt.Sprintf("contains the invisible formatting character %U", r))
		}
	}
	return nil
}

// Home returns the ATM home directory: $ATM_HOME when it is set and not blank
// (trimmed), otherwise the user's home directory. ATM_HOME replaces $HOME; it
// is not the .claude directory.
func Home() (string, error) {
	if h := strings.TrimSpace(os.Getenv("ATM_HOME")); h != "" {
		return filepath.Clean(h), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("atm home: %w", err)
	}
	return h, nil
}
