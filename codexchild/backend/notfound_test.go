package backend

import "testing"

// TestNotFoundMessage: the message names the program, and the PATH when
// the program is a name looked up in it.
func TestNotFoundMessage(t *testing.T) {
	tests := []struct {
		e    NotFoundError
		want string
	}{
		{NotFoundError{Bin: "codex", Program: "codex binary", Path: "/usr/bin:/bin", Detail: `exec: "codex": executable file not found in $PATH`},
			`codex binary "codex" was not found on PATH (PATH=/usr/bin:/bin): exec: "codex": executable file not found in $PATH`},
		{NotFoundError{Bin: "/opt/codex", Program: "codex binary", Path: "/usr/bin", Detail: "fork/exec /opt/codex: no such file or directory"},
			`codex binary "/opt/codex" cannot be run: fork/exec /opt/codex: no such file or directory`},
		{NotFoundError{Bin: "mockacp", Path: "/usr/bin"}, `program "mockacp" was not found on PATH (PATH=/usr/bin)`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}
