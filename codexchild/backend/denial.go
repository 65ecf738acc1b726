package backend

import "strings"

// An agent is told why an approval was denied where its protocol has no
// place for the reason: Codex mcp-server shows the model the rejection it
// is given, but Codex app-server's "decline" carries no reason (the model
// reads Codex's own "rejected by user"), and claude-agent-acp answers both
// its reject option and a cancelled request with "User refused permission
// to run tool". A denial nobody decided (a headless client that cancels
// every question, approval_fallback deny, a timeout) would read as a
// person's refusal, so each backend whose protocol cannot carry the reason
// gives the agent this note (app-server steers the running turn with it;
// an ACP agent reads it at the start of its next prompt).

// DenialNote is the note for a denial whose reason the protocol cannot
// carry; "" when there is nothing to tell (not a denial, no reason, or a
// denial that comes with the end of the turn).
func DenialNote(a *Approval, d Decision) string {
	if d.Kind != Deny || d.TurnEnds || strings.TrimSpace(d.Reason) == "" {
		return ""
	}
	what := "the tool call"
	switch {
	case a.Kind == ApprovalExec && a.Command != "":
		what = "`" + clip(a.Command, 200) + "`"
	case a.Kind == ApprovalExec:
		what = "the command"
	case a.Kind == ApprovalPatch:
		what = "the file changes"
	case a.Message != "":
		what = clip(a.Message, 200)
	}
	return "[atm-agent-mcp: the approval for " + what + " was denied: " + strings.TrimSpace(d.Reason) +
		". Whatever the tool result says about a user, this is who or what decided.]"
}

// clip cuts s (trimmed) to n characters on a character boundary, adding
// "…" when it cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
