package registry

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Redacted replaces every secret Redact removes.
const Redacted = "[REDACTED]"

// secretRules are applied in order. Each replaces its whole match, except
// that assignments and bearer tokens keep their key so the entry stays
// readable. A rule's hints are strings every match contains (in lower case
// when fold is set): a rule whose hints are all absent cannot match, and
// its regular expression is not run. Every prompt of every turn is
// redacted, so this keeps Redact off the turn's latency.
var secretRules = []struct {
	re    *regexp.Regexp
	repl  string
	fold  bool
	hints []string
}{
	// PEM private key blocks, also when cut off before the END line.
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), Redacted,
		false, []string{"PRIVATE KEY-----"}},
	// Authorization headers (any scheme) and bearer tokens anywhere.
	{regexp.MustCompile(`(?i)(\bauthorization["']?\s*[:=]\s*["']?(?:[A-Za-z]+\s+)?)[^\s"',;]+`), "${1}" + Redacted,
		true, []string{"authorization"}},
	{regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`), "${1}" + Redacted,
		true, []string{"bearer"}},
	// KEY=value, KEY: value, "key": "value" for names that look secret:
	// *_API_KEY, *_TOKEN, *_SECRET, password, passwd, ...
	{regexp.MustCompile(`(?i)([A-Za-z0-9_.\-]*(?:api[_\-]?key|access[_\-]?key|token|secret|password|passwd|credentials?)["']?\s*[:=]\s*)(\[REDACTED\]|"[^"]*"|'[^']*'|[^\s"',;&}\]]+)`), "${1}" + Redacted,
		true, []string{"key", "token", "secret", "passw", "credential"}},
	// Provider key formats: OpenAI and Anthropic (sk-...), session keys
	// (sess-...), GitHub, Slack, AWS access key ids, Google API keys.
	{regexp.MustCompile(`\b(?:sk|sess)-[A-Za-z0-9_\-]{8,}`), Redacted, false, []string{"sk-", "sess-"}},
	{regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), Redacted,
		false, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`), Redacted, false, []string{"xox"}},
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`), Redacted, false, []string{"AKIA", "ASIA"}},
	{regexp.MustCompile(`\bAIza[A-Za-z0-9_\-]{35}`), Redacted, false, []string{"AIza"}},
}

// Redact returns s with credentials replaced by [Redacted]: API keys
// (sk-…, sess-…, GitHub, Slack, AWS, Google), bearer and basic
// authorization values, values assigned to names ending in API_KEY, TOKEN,
// SECRET or PASSWORD (KEY=v, KEY: v, "key": "v"), and PEM private key
// blocks. It errs on the side of removing too much.
func Redact(s string) string {
	return redact(s, true)
}

// redact applies the rules, skipping those whose hints are absent when
// hinted is set (and s is ASCII: Unicode case folding matches more than
// strings.ToLower finds, so other text runs every rule).
func redact(s string, hinted bool) string {
	for _, r := range secretRules {
		if hinted && isASCII(s) && !hasHint(s, r.fold, r.hints) {
			continue
		}
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

func hasHint(s string, fold bool, hints []string) bool {
	if fold {
		s = strings.ToLower(s)
	}
	for _, h := range hints {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// truncateRunes returns the first n characters of s, never cutting a UTF-8
// sequence. Invalid bytes count as one character each.
func truncateRunes(s string, n int) string {
	i := 0
	for range n {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
