//go:build unix

package testscripts

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// goInstallVersion is the test release's version.
const goInstallVersion = "v0.99.0"

// TestGoInstall proves `go install …@version` on a fresh machine: in a
// temporary clone of this repository, make release cuts a test release;
// a file-based module proxy is built from its tags, in Go's zip format;
// then, with an empty GOPATH and module cache, the proxy first and the
// usual one after it, -mod=mod and no checksum database for this module
// path, go install builds the binary at that version, and its --version
// prints the version (from the build info, no ldflags).
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("go install of a test release: not in -short")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "repo")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gitEnv := []string{"GIT_AUTHOR_NAME=release-test", "GIT_AUTHOR_EMAIL=release@test", "GIT_COMMITTER_NAME=release-test",
		"GIT_COMMITTER_EMAIL=release@test", "GIT_CONFIG_GLOBAL=/dev/null"}
	run(tmp, gitEnv, "git", "clone", "-q", root, clone)
	start := time.Now()
	run(clone, gitEnv, "make", "-s", "release", "VERSION="+goInstallVersion)
	t.Logf("make release: %.1fs", time.Since(start).Seconds())

	// The module proxy: list, info, mod and zip of every tagged module.
	const prefix = "github.com/atm-agent-mcp/atm-agent-mcp/"
	proxy := filepath.Join(tmp, "proxy")
	for _, tag := range strings.Fields(run(clone, nil, "git", "tag", "--list", "*/"+goInstallVersion)) {
		dir, version, _ := strings.Cut(tag, "/")
		mod := module.Version{Path: prefix + dir, Version: version}
		esc, err := module.EscapePath(mod.Path)
		if err != nil {
			t.Fatal(err)
		}
		at := filepath.Join(proxy, esc, "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			t.Fatal(err)
		}
		gomod := run(clone, nil, "git", "show", tag+":"+dir+"/go.mod")
		if strings.Contains(gomod, "\nreplace") {
			t.Errorf("%s: the released go.mod has replace lines:\n%s", tag, gomod)
		}
		info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
		for name, body := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": []byte(gomod)} {
			if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		zf, err := os.Create(filepath.Join(at, version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		if err := modzip.CreateFromVCS(zf, mod, clone, tag, dir); err != nil {
			t.Fatalf("zip %s: %v", tag, err)
		}
		zf.Close()
	}

	usual := strings.TrimSpace(run(root, nil, "go", "env", "GOPROXY"))
	gobin := filepath.Join(tmp, "bin")
	env := []string{"GOPATH=" + filepath.Join(tmp, "gopath"), "GOMODCACHE=" + filepath.Join(tmp, "modcache"), "GOBIN=" + gobin,
		"GOPROXY=file://" + proxy + "," + usual, "GOFLAGS=-mod=mod", "GONOSUMDB=github.com/atm-agent-mcp",
		"GOWORK=off", "GOTOOLCHAIN=local", "GOCACHE=" + filepath.Join(tmp, "gocache")}
	start = time.Now()
	run(tmp, env, "go", "install", prefix+"agentmcp/cmd/atm-agent-mcp@"+goInstallVersion)
	t.Logf("go install: %.1fs", time.Since(start).Seconds())
	out := run(tmp, nil, filepath.Join(gobin, "atm-agent-mcp"), "--version")
	if got := strings.TrimSpace(out); !bytes.Contains([]byte(got), []byte(goInstallVersion)) {
		t.Errorf("the installed binary's --version: %q, want %s", got, goInstallVersion)
	}
	// The modules cache read-only files: let TempDir remove them.
	_ = filepath.Walk(tmp, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			_ = os.Chmod(p, fi.Mode()|0o200)
		}
		return nil
	})
}
