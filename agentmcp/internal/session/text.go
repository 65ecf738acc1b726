package session

import (
	"strings"
)

// Clip cuts s (trimmed) to n characters on a character boundary, adding
// "…" when it cut.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s // no more bytes than n: no more characters either
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func orNull(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

func nullable(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
