package config

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidValue is wrapped by every [*Error] about a value.
	ErrInvalidValue = errors.New("invalid configuration value")
	// ErrMalformedFile is wrapped by the error for a file that is not valid
	// TOML or cannot be read.
	ErrMalformedFile = errors.New("malformed configuration file")
	// ErrFileNotFound is wrapped by the error for a configuration file
	// named by --config or ATM_CONFIG that does not exist.
	ErrFileNotFound = errors.New("configuration file not found")
	// ErrUnreadableFile is wrapped by the error for a configuration file
	// that exists but cannot be read.
	ErrUnreadableFile = errors.New("cannot read configuration file")
)

// Error is a bad configuration value: where it came from, what it was and
// what is expected.
type Error struct {
	Key      string // configuration key, e.g. "sandbox" or "roles.worker.model"
	Source   Source // where the bad value came from
	Value    string // the value as given (TOML or raw text)
	Expected string // the expected form, e.g. "one of read-only, workspace-write"
}

// Error renders "where: value: expected ...", e.g.
// `/x/.atm.toml: plugins.atm-agent-mcp.sandbox = "open": expected one of ...`.
func (e *Error) Error() string {
	var where string
	switch e.Source.Kind {
	case SourceFile:
		where = fmt.Sprintf("%s: %s = %s", e.Source.Detail, e.Source.Key, e.Value)
	case SourceEnv:
		where = fmt.Sprintf("environment %s=%s", e.Source.Detail, e.Value)
	case SourceFlag:
		where = fmt.Sprintf("flag %s %s", e.Source.Detail, e.Value)
	default:
		where = fmt.Sprintf("%s = %s", e.Key, e.Value)
	}
	return fmt.Sprintf("%s: expected %s", where, e.Expected)
}

// Unwrap returns ErrInvalidValue.
func (e *Error) Unwrap() error { return ErrInvalidValue }

// Warning is a problem that does not stop start-up, such as an unknown key.
type Warning struct {
	File    string `json:"file"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// String renders "file: key: message".
func (w Warning) String() string {
	return fmt.Sprintf("%s: %s: %s", w.File, w.Key, w.Message)
}
