package sshhost

import "strings"

// Quote returns s quoted for a POSIX shell (sh, bash, dash, zsh, ksh): one
// word that the shell turns back into s, byte for byte. A word of only
// safe characters is left as it is, for readable command lines; any other
// is put in single quotes, each single quote inside as '\”. s must not
// hold a NUL byte, which no command line can carry.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.Trim(s, safeChars) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each of words (Quote) and joins them with spaces: a command
// line that a POSIX shell splits back into words.
func Join(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// safeChars need no quoting in any position of a word: no shell
// metacharacter, no glob, no tilde, no assignment sign (a first word with
// one would be an assignment), no brace.
const safeChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+:,./-"
