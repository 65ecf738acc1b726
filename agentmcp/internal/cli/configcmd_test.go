package cli

import "testing"

// TestShellJoin: config shows an agent's command line as a shell would
// read it, quoting only the words that need it.
func TestShellJoin(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"gemini", "--acp"}, "gemini --acp"},
		{[]string{"npx", "-y", "@qwen-code/qwen-code@0.15.10"}, "npx -y @qwen-code/qwen-code@0.15.10"},
		{[]string{"/opt/my agent/bin/run", ""}, "'/opt/my agent/bin/run' ''"},
		{[]string{"sh", "-c", "echo 'hi' $HOME"}, `sh -c 'echo '\''hi'\'' $HOME'`},
	}
	for _, tt := range tests {
		if got := shellJoin(tt.words); got != tt.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tt.words, got, tt.want)
		}
	}
}

// TestVersionWord: the version is found in what agents print for
// --version.
func TestVersionWord(t *testing.T) {
	tests := []struct{ out, want string }{
		{"claude-agent-acp 0.101.0", "0.101.0"},
		{"0.61.0", "0.61.0"},
		{"opencode v1.18.33", "1.18.33"},
		{"qwen 0.15.10-nightly.2", "0.15.10-nightly.2"},
		{"usage: agent [flags]", ""},
	}
	for _, tt := range tests {
		got := ""
		if m := versionWord.FindStringSubmatch(tt.out); m != nil {
			got = m[1]
		}
		if got != tt.want {
			t.Errorf("version in %q = %q, want %q", tt.out, got, tt.want)
		}
	}
}
