package codexversion

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   Version
		wantOK bool
	}{
		{"0.171.0", Version{0, 171, 0, ""}, true},
		{"0.104", Version{0, 104, 0, ""}, true},
		{" 1.2.3-alpha.4\n", Version{1, 2, 3, "alpha.4"}, true},
		{"0.172.0-alpha.1", Version{0, 172, 0, "alpha.1"}, true},
		{"", Version{}, false},
		{"0", Version{}, false},
		{"0.x.1", Version{}, false},
		{"0.1.2.3", Version{}, false},
		{"0.-1.0", Version{}, false},
		{"codex-cli", Version{}, false},
	} {
		got, ok := Parse(tt.in)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"0.171.0", "0.171.0", 0},
		{"0.171.0", "0.169.0", 1},
		{"0.153.4", "0.153.10", -1},
		{"0.99.0", "0.104.0", -1},
		{"1.0.0", "0.999.0", 1},
		{"0.172.0-alpha.1", "0.172.0", -1},
		{"0.172.0", "0.172.0-alpha.1", 1},
		{"0.172.0-alpha.1", "0.172.0-alpha.2", -1},
		{"0.172.0-alpha.1", "0.171.0", 1},
	} {
		a, _ := Parse(tt.a)
		b, _ := Parse(tt.b)
		if got := a.Compare(b); got != tt.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSupportOf(t *testing.T) {
	var got []Support
	for _, v := range []string{"0.99.0", Oldest, "0.153.3", TestedMCPServer, "0.160.2", TestedAppServer, "0.171.1", "0.172.0-alpha.1", "1.0.0", "dev", ""} {
		got = append(got, SupportOf(v))
	}
	want := []Support{TooOld, OlderThanTested, OlderThanTested, Tested, Tested, Tested, NewerThanTested, NewerThanTested, NewerThanTested, Unknown, Unknown}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SupportOf (-want +got):\n%s", diff)
	}
}

// TestMakefilePins keeps the versions make test installs (the Makefile's
// CODEX_MCP_VERSION and CODEX_APP_VERSION) equal to the tested versions
// written here, which the doctor reports and the real-Codex tests check
// the installed binaries against. Outside a checkout (no Makefile) it
// skips.
func TestMakefilePins(t *testing.T) {
	mk := findMakefile(t)
	data, err := os.ReadFile(mk)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(CODEX_(?:MCP|APP)_VERSION)\s*\??=\s*(\S+)\s*$`).FindAllSubmatch(data, -1) {
		got[string(m[1])] = string(m[2])
	}
	want := map[string]string{"CODEX_MCP_VERSION": TestedMCPServer, "CODEX_APP_VERSION": TestedAppServer}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s pins (-codexversion +Makefile):\n%s", mk, diff)
	}
}

// findMakefile walks up from the working directory to the repository's
// Makefile (the directory that holds go.work).
func findMakefile(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "Makefile")
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.work above the working directory: not a checkout, no Makefile to compare")
		}
		dir = parent
	}
}
