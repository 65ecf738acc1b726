package realacp

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireEnv turns a missing node, npm or agent package from a skip into a
// failure when set to "1" (as for the real Codex CLIs; CI sets it).
const RequireEnv = "ATM_REQUIRE_REAL_CODEX"

// CacheEnv overrides the directory the agents are installed into
// (default: <repo>/.cache/acp, the repo found by walking up to go.work).
const CacheEnv = "ATM_ACP_CACHE"

// projects holds one npm project per agent: testdata/<name>/package.json
// and its package-lock.json, which pins every package.
//
//go:embed testdata
var projects embed.FS

// installTimeout bounds one npm ci.
const installTimeout = 10 * time.Minute

// Install installs the pinned npm project of the agent name (one of the
// directories under testdata: "claude-agent-acp", "opencode") with npm ci
// into the cache (see [CacheEnv]) as <cache>/<name>, once per lock file: a
// stamp holds the lock's hash, and a file lock serialises test processes
// (go test runs packages in parallel). It returns the absolute path of rel
// inside that directory, such as "node_modules/.bin/claude-agent-acp".
// Without node (>= 20) or npm, or when the install fails (no registry),
// the test is skipped loudly, or fails under ATM_REQUIRE_REAL_CODEX=1.
// Under -short (make check) it always skips.
func Install(t testing.TB, name, rel string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIP real agent %s: -short (make check) installs and runs no real agent", name)
	}
	skip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("real agent %s required (%s=1): %s", name, RequireEnv, msg)
		}
		t.Skipf("SKIP real agent %s: %s", name, msg)
	}
	lockJSON, err := projects.ReadFile(path.Join("testdata", name, "package-lock.json"))
	if err != nil {
		t.Fatalf("realacp: no pinned npm project for agent %q: %v", name, err)
	}
	pkgJSON, err := projects.ReadFile(path.Join("testdata", name, "package.json"))
	if err != nil {
		t.Fatalf("realacp: agent %q: %v", name, err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("npm: %v", err)
	}
	if out, err := exec.Command("node", "--version").Output(); err != nil {
		skip("node: %v", err)
	} else if v, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "."); atoiOr(v) < 20 {
		skip("node %s; need >= 20", strings.TrimSpace(string(out)))
	}
	sum := sha256.Sum256(lockJSON)
	want := hex.EncodeToString(sum[:])
	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	stamp := filepath.Join(dir, "node_modules", ".atm-installed")
	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == want {
		return filepath.Join(dir, rel)
	}
	for f, b := range map[string][]byte{"package.json": pkgJSON, "package-lock.json": lockJSON} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	begin := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		skip("npm ci in %s: %v\n%s", dir, err, out)
	}
	t.Logf("npm ci in %s: %.1fs", dir, time.Since(begin).Seconds())
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, rel)
}

// CacheDir returns the directory the agents are installed into: $ATM_ACP_CACHE,
// else .cache/acp in the repository (found by walking up from the working
// directory to go.work), else $HOME/.cache/atm-agent-mcp-test/acp.
func CacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("realacp: cache dir: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return filepath.Join(d, ".cache", "acp"), nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("realacp: cache dir: %w", err)
	}
	return filepath.Join(home, ".cache", "atm-agent-mcp-test", "acp"), nil
}

func atoiOr(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
