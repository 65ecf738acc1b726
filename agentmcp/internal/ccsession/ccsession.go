// Package ccsession reads the records Claude Code keeps of its running
// sessions, {home}/.claude/sessions/{pid}.json (2.1.332), to follow a
// conversation that moves to a background session.
//
// Pressing ← ("for agents") in an interactive Claude Code parks the
// conversation: Claude Code forks it into a background session (a new
// session id, its own process and MCP servers, its own session team) and
// writes the background job's short id (the first 8 characters of the new
// session's id) as parkedJobId into the interactive process's record,
// whose MCP servers keep running. A serve of the interactive process reads
// its client's record (found by its messaging socket, else by its parent
// pid) to learn that its conversation moved, and where; the serve of the
// background session finds the record parked to it. The files are Claude
// Code's: they are only read, and a record that does not parse (being
// written) reads as absent. What was measured is in
// docs/claude-code-agents-view.md.
package ccsession

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Record is one running Claude Code session as its record says; the
// fields this package uses.
type Record struct {
	// PID is the Claude Code process.
	PID int `json:"pid"`
	// SessionID is the session the process runs.
	SessionID string `json:"sessionId"`
	// Kind is "interactive", "bg" (a background session) or another kind.
	Kind string `json:"kind"`
	// JobID is a background session's job: the short id of its session.
	JobID string `json:"jobId"`
	// ParkedJobID is set on an interactive session whose conversation
	// moved to the background job of that short id.
	ParkedJobID string `json:"parkedJobId"`
	// MessagingSocketPath is the socket the session gives its MCP servers
	// as CLAUDE_CODE_MESSAGING_SOCKET.
	MessagingSocketPath string `json:"messagingSocketPath"`
}

// Dir is where Claude Code keeps the records under home.
func Dir(home string) string { return filepath.Join(home, ".claude", "sessions") }

// Short is the short id of a session: the first 8 characters of its id,
// which name its background job and its session team (session-<short>).
func Short(sessionID string) string {
	sessionID = strings.TrimSpace(sessionID)
	if len(sessionID) > 8 {
		return sessionID[:8]
	}
	return sessionID
}

// Read reads the record of the Claude Code process pid; false when there
// is none or it does not parse.
func Read(home string, pid int) (Record, bool) {
	return readFile(filepath.Join(Dir(home), strconv.Itoa(pid)+".json"))
}

func readFile(path string) (Record, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Record{}, false
	}
	var r Record
	if json.Unmarshal(b, &r) != nil || r.PID == 0 {
		return Record{}, false
	}
	return r, true
}

// List returns every record that parses, in no particular order.
func List(home string) []Record {
	paths, _ := filepath.Glob(filepath.Join(Dir(home), "*.json"))
	var out []Record
	for _, p := range paths {
		if r, ok := readFile(p); ok {
			out = append(out, r)
		}
	}
	return out
}

// Client returns the record of the Claude Code session that started this
// process: the one whose messaging socket is socket (the process's
// CLAUDE_CODE_MESSAGING_SOCKET), else the one of process ppid (a
// launcher that execs keeps Claude Code the parent). False when neither
// has a record.
func Client(home, socket string, ppid int) (Record, bool) {
	if socket != "" {
		for _, r := range List(home) {
			if r.MessagingSocketPath == socket {
				return r, true
			}
		}
	}
	if ppid > 1 {
		return Read(home, ppid)
	}
	return Record{}, false
}

// ParkedTo returns the records of the sessions whose conversation moved to
// the background job short: the conversation the session short continues.
func ParkedTo(home, short string) []Record {
	if short == "" {
		return nil
	}
	var out []Record
	for _, r := range List(home) {
		if r.ParkedJobID == short {
			out = append(out, r)
		}
	}
	return out
}
