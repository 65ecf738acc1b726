package gitctx

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpTo(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		ceilings []string
		want     []string
	}{
		{"no ceiling", "/a/b/c", nil, []string{"/a/b/c", "/a/b", "/a", "/"}},
		{"ceiling above", "/a/b/c", []string{"/a"}, []string{"/a/b/c", "/a/b"}},
		{"nearest ceiling wins", "/a/b/c", []string{"/a", "/a/b"}, []string{"/a/b/c"}},
		{"ceiling is the start", "/a/b", []string{"/a/b"}, []string{"/a/b", "/a", "/"}},
		{"ceiling elsewhere", "/a/b", []string{"/x", "/a/bb"}, []string{"/a/b", "/a", "/"}},
		{"root ceiling", "/a/b", []string{"/"}, []string{"/a/b", "/a"}},
		{"unclean start", "/a/b/../b/c/", []string{"/a"}, []string{"/a/b/c", "/a/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Collect(UpTo(tt.dir, tt.ceilings))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("UpTo(%q, %q) (-want +got):\n%s", tt.dir, tt.ceilings, diff)
			}
		})
	}
}

func TestUpStops(t *testing.T) {
	var got []string
	for d := range UpTo("/a/b/c", nil) {
		got = append(got, d)
		if d == "/a/b" {
			break
		}
	}
	if diff := cmp.Diff([]string{"/a/b/c", "/a/b"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCeilings(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	// dir itself may lie behind a symbolic link (macOS /var): resolve it
	// for the expected values.
	realResolved, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	sep := string(os.PathListSeparator)
	tests := []struct {
		name string
		list string
		want []string
	}{
		{"unset", "", nil},
		{"relative ignored", "rel" + sep + "/abs/x/", []string{"/abs/x"}},
		{"link resolved", link, []string{link, realResolved}},
		{"after an empty entry not resolved", sep + link, []string{link}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Ceilings(tt.list)); diff != "" {
				t.Errorf("Ceilings(%q) (-want +got):\n%s", tt.list, diff)
			}
		})
	}
}

// TestUpAgreesWithGit: with a ceiling set, the nearest directory holding
// .git along Up is the one git itself reports (none when the only
// repository lies at or above the ceiling).
func TestUpAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	outer := filepath.Join(dir, "outer")
	work := filepath.Join(outer, "ceiling", "work", "sub")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	nearest := func() string {
		for d := range Up(work) {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				return d
			}
		}
		return ""
	}
	gitTop := func() string {
		cmd := exec.Command("git", "rev-parse", "--show-toplevel")
		cmd.Dir = work
		out, err := cmd.Output()
		if err != nil {
			return "" // not a git repository
		}
		return strings.TrimSpace(string(out))
	}
	for _, ceiling := range []string{"", filepath.Join(outer, "ceiling"), outer, filepath.Join(outer, "ceiling", "work")} {
		t.Run("ceiling="+ceiling, func(t *testing.T) {
			t.Setenv(CeilingEnv, ceiling)
			if got, want := nearest(), gitTop(); got != want {
				t.Errorf("Up finds %q, git finds %q", got, want)
			}
		})
	}
}
