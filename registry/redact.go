package registry

import (
	"regexp"
	"unicode/utf8"
)

// Redacted replaces every secret Redact removes.
const Redacted = "[REDACTED]"

// secretRules are applied in order. Each replaces its whole match, except
// that assignments and bearer tokens keep their key so the entry stays
// readable.
var secretRules = []struct {
	re   *regexp.Regexp
	repl string
}{
	// PEM private key blocks, also when cut off before the END line.
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), Redacted},
	// Authorization headers (any scheme) and bearer tokens anywhere.
	{regexp.MustCompile(`(?i)(\bauthorization["']?\s*[:=]\s*["']?(?:[A-Za-z]+\s+)?)[^\s"',;]+`), "${1}" + Redacted},
	{regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`), "${1}" + Redacted},
	// KEY=value, KEY: value, "key": "value" for names that look secret:
	// *_API_KEY, *_TOKEN, *_SECRET, password, passwd, ...
	{regexp.MustCompile(`(?i)([A-Za-z0-9_.\-]*(?:api[_\-]?key|access[_\-]?key|token|secret|password|passwd|credentials?)["']?\s*[:=]\s*)(\[REDACTED\]|"[^"]*"|'[^']*'|[^\s"',;&}\]]+)`), "${1}" + Redacted},
	// Provider key formats: OpenAI and Anthropic (sk-...), session keys
	// (sess-...), GitHub, Slack, AWS access key ids, Google API keys.
	{regexp.MustCompile(`\b(?:sk|sess)-[A-Za-z0-9_\-]{8,}`), Redacted},
	{regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), Redacted},
	{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`), Redacted},
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`), Redacted},
	{regexp.MustCompile(`\bAIza[A-Za-z0-9_\-]{35}`), Redacted},
}

// Redact returns s with credentials replaced by [Redacted]: API keys
// (sk-…, sess-…, GitHub, Slack, AWS, Google), bearer and basic
// authorization values, values assigned to names ending in API_KEY, TOKEN,
// SECRET or PASSWORD (KEY=v, KEY: v, "key": "v"), and PEM private key
// blocks. It errs on the side of removing too much.
func Redact(s string) string {
	for _, r := range secretRules {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
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
