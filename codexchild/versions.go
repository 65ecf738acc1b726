package codexchild

import "github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/codexversion"

// The Codex versions the backends know (docs/codex-wire.md): the supported
// floor and the tested range, from the last `codex mcp-server` to the
// app-server version make test runs.
const (
	// OldestCodex is the oldest Codex the backends drive.
	OldestCodex = codexversion.Oldest
	// TestedMCPServerCodex is the Codex whose mcp-server make test runs,
	// the oldest version tested.
	TestedMCPServerCodex = codexversion.TestedMCPServer
	// TestedAppServerCodex is the Codex whose app-server make test runs,
	// the newest version tested.
	TestedAppServerCodex = codexversion.TestedAppServer
)

// CodexSupport says what is known of a Codex version ("0.171.0").
type CodexSupport = codexversion.Support

// What is known of a Codex version: the values of [CodexSupport].
const (
	// CodexUnknown: the version does not parse.
	CodexUnknown = codexversion.Unknown
	// CodexTooOld: older than [OldestCodex]; not driven.
	CodexTooOld = codexversion.TooOld
	// CodexOlderThanTested: from [OldestCodex], older than
	// [TestedMCPServerCodex]; driven, no longer tested.
	CodexOlderThanTested = codexversion.OlderThanTested
	// CodexTested: from [TestedMCPServerCodex] to [TestedAppServerCodex]
	// (tested, or between two tested versions).
	CodexTested = codexversion.Tested
	// CodexNewerThanTested: newer than [TestedAppServerCodex]; driven,
	// not yet tested.
	CodexNewerThanTested = codexversion.NewerThanTested
)

// SupportOf says where a Codex version stands against the supported floor
// and the tested range.
func SupportOf(version string) CodexSupport { return codexversion.SupportOf(version) }
