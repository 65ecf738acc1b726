package session

import (
	"encoding/json"
	"strings"
)

// Clip cuts s (trimmed) to n characters on a character boundary, adding
// "…" when it cut.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// ShortCommand renders a Codex command given as a string or an argv for a
// human, dropping a leading "bash -lc" and cutting it to 80 characters.
func ShortCommand(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		// app-server sends "/bin/bash -lc '<cmd>'" as one string.
		for _, pre := range []string{"/bin/bash -lc '", "bash -lc '", "/bin/sh -c '"} {
			if rest, ok := strings.CutPrefix(s, pre); ok && strings.HasSuffix(rest, "'") {
				s = strings.ReplaceAll(strings.TrimSuffix(rest, "'"), `'\''`, "'")
				break
			}
		}
		return Clip(s, 80)
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		if len(argv) == 3 && strings.HasSuffix(argv[0], "bash") && argv[1] == "-lc" {
			return Clip(argv[2], 80)
		}
		return Clip(strings.Join(argv, " "), 80)
	}
	return "a command"
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
