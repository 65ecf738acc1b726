package codexchild

import (
	"encoding/json"
	"strconv"
	"strings"
)

// shortCommand renders a Codex command given as a string (app-server) or
// an argv (mcp-server) for a human, dropping a leading "bash -lc" and
// cutting it to 80 characters.
func shortCommand(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		// app-server sends "/bin/bash -lc '<cmd>'" as one string.
		for _, pre := range []string{"/bin/bash -lc '", "bash -lc '", "/bin/sh -c '"} {
			if rest, ok := strings.CutPrefix(s, pre); ok && strings.HasSuffix(rest, "'") {
				s = strings.ReplaceAll(strings.TrimSuffix(rest, "'"), `'\''`, "'")
				break
			}
		}
		return clip(s, 80)
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		if len(argv) == 3 && strings.HasSuffix(argv[0], "bash") && argv[1] == "-lc" {
			return clip(argv[2], 80)
		}
		return clip(strings.Join(argv, " "), 80)
	}
	return "a command"
}

// files is "1 file" or "n files".
func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return strconv.Itoa(n) + " files"
}
