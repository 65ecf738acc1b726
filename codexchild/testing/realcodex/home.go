package realcodex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TagEnv is the environment variable [Home.Env] sets to the home's directory.
// Every process started for the home carries it (or CODEX_HOME), which is
// how the leak check finds them.
const TagEnv = "ATM_REALCODEX_HOME"

// HomeOptions adjusts [NewHome]. A nil *HomeOptions means all defaults.
type HomeOptions struct {
	// ApprovalPolicy is config.toml's approval_policy; "" means "on-request".
	// ("untrusted" makes 0.153.4, 0.169 and 0.171 exit at start.)
	ApprovalPolicy string
	// SandboxMode is config.toml's sandbox_mode; "" means "workspace-write".
	SandboxMode string
	// GitInit runs `git init` in the work dir when true.
	GitInit bool
	// ExtraTOML is appended to config.toml as is. The generated part sets
	// only top-level (dotted) keys, so it may add keys and tables.
	ExtraTOML string
	// RustLog is the RUST_LOG for Codex; "" means $ATM_CODEX_RUST_LOG, or
	// "warn" when that is unset too.
	RustLog string
	// KeepOnFailure keeps the directory of a failed test for inspection (its
	// path is logged) when true.
	KeepOnFailure bool
}

// Home is a CODEX_HOME prepared for the mock model. It and everything in it
// are removed when the test ends.
type Home struct {
	// Dir is the CODEX_HOME directory.
	Dir string
	// WorkDir is a directory inside Dir to use as the threads' cwd.
	WorkDir string
	// UserHome is the HOME of the processes started with [Home.Env]: an
	// empty directory inside Dir, so that the developer's dotfiles (the
	// ~/.bashrc that Codex's shell snapshot sources in a login shell, a
	// ~/.gitconfig) neither slow the tests down nor change what they see.
	UserHome string
	// ModelURL is the mock's base URL written to config.toml.
	ModelURL string

	t       testing.TB
	rustLog string
	nproc   int // numbers the processes started, for log file names
}

// NewHome creates a CODEX_HOME whose config.toml points the "mock" provider at
// modelURL (the mock's base URL, ending in /v1), with a work dir inside. The
// directory is outside /tmp (see the package doc). At cleanup it checks that
// no process started for the home is still alive, then removes it.
func NewHome(t testing.TB, modelURL string, opts *HomeOptions) *Home {
	t.Helper()
	var o HomeOptions
	if opts != nil {
		o = *opts
	}
	base, err := homesDir()
	if err != nil {
		t.Fatalf("realcodex: %v", err)
	}
	dir, err := os.MkdirTemp(base, "h-"+shortName(t.Name())+"-")
	if err != nil {
		t.Fatalf("realcodex: create CODEX_HOME: %v", err)
	}
	h := &Home{Dir: dir, WorkDir: filepath.Join(dir, "work"), UserHome: filepath.Join(dir, "user-home"), ModelURL: modelURL, t: t, rustLog: o.RustLog}
	if h.rustLog == "" {
		h.rustLog = os.Getenv("ATM_CODEX_RUST_LOG")
	}
	if h.rustLog == "" {
		h.rustLog = "warn"
	}
	t.Cleanup(func() {
		checkLeaks(t, h)
		if o.KeepOnFailure && t.Failed() {
			t.Logf("realcodex: keeping CODEX_HOME %s of the failed test", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("realcodex: remove CODEX_HOME: %v", err)
		}
	})
	for _, d := range []string{h.WorkDir, h.UserHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("realcodex: %v", err)
		}
	}
	if err := os.WriteFile(h.ConfigPath(), []byte(configTOML(modelURL, o)), 0o600); err != nil {
		t.Fatalf("realcodex: write config.toml: %v", err)
	}
	if o.GitInit {
		cmd := exec.Command("git", "init", "-q", h.WorkDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("realcodex: git init: %v\n%s", err, out)
		}
	}
	return h
}

// configTOML is the config.toml of a home for the mock provider.
func configTOML(modelURL string, o HomeOptions) string {
	approval, sandbox := o.ApprovalPolicy, o.SandboxMode
	if approval == "" {
		approval = "on-request"
	}
	if sandbox == "" {
		sandbox = "workspace-write"
	}
	var b strings.Builder
	b.WriteString("# Written by realcodex.NewHome for a test: the mock Responses API on loopback.\n")
	fmt.Fprintf(&b, "model = %s\n", strconv.Quote("mock-model"))
	fmt.Fprintf(&b, "model_provider = %s\n", strconv.Quote("mock"))
	fmt.Fprintf(&b, "approval_policy = %s\n", strconv.Quote(approval))
	fmt.Fprintf(&b, "sandbox_mode = %s\n", strconv.Quote(sandbox))
	fmt.Fprintf(&b, "model_providers.mock.name = %s\n", strconv.Quote("Mock Responses"))
	fmt.Fprintf(&b, "model_providers.mock.base_url = %s\n", strconv.Quote(modelURL))
	fmt.Fprintf(&b, "model_providers.mock.wire_api = %s\n", strconv.Quote("responses"))
	fmt.Fprintf(&b, "model_providers.mock.env_key = %s\n", strconv.Quote("MOCK_API_KEY"))
	b.WriteString("model_providers.mock.request_max_retries = 0\n")
	b.WriteString("model_providers.mock.stream_max_retries = 0\n")
	b.WriteString("model_providers.mock.stream_idle_timeout_ms = 60000\n")
	if o.ExtraTOML != "" {
		b.WriteString("\n" + o.ExtraTOML + "\n")
	}
	return b.String()
}

// ConfigPath returns the path of config.toml.
func (h *Home) ConfigPath() string { return filepath.Join(h.Dir, "config.toml") }

// SessionsDir returns the directory Codex writes rollouts to:
// sessions/YYYY/MM/DD/rollout-<local time>-<threadId>.jsonl.
func (h *Home) SessionsDir() string { return filepath.Join(h.Dir, "sessions") }

// RulesPath returns the exec-policy rules file that an "approve with
// amendment" answer writes; later identical commands are then not asked
// about. Remove it with [Home.ResetRules].
func (h *Home) RulesPath() string { return filepath.Join(h.Dir, "rules", "default.rules") }

// ResetRules removes the rules file, if any.
func (h *Home) ResetRules() error {
	if err := os.Remove(h.RulesPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// OutsidePath returns the path of name in the home but outside the work dir:
// a patch that adds a file there needs approval under workspace-write.
func (h *Home) OutsidePath(name string) string { return filepath.Join(h.Dir, name) }

// LogDir returns the directory that holds the stderr of the processes
// started by [Start].
func (h *Home) LogDir() string { return filepath.Join(h.Dir, "logs") }

var rolloutRE = regexp.MustCompile(`^rollout-.*-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

// Rollouts returns the paths of every rollout file under the sessions dir,
// sorted, and nil without error when there is none.
func (h *Home) Rollouts() ([]string, error) {
	var paths []string
	err := filepath.WalkDir(h.SessionsDir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && rolloutRE.MatchString(d.Name()) {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	return paths, err
}

// RolloutFor returns the rollout file of a thread (the thread id is the UUID
// at the end of the file name), or an error wrapping fs.ErrNotExist.
func (h *Home) RolloutFor(threadID string) (string, error) {
	paths, err := h.Rollouts()
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if m := rolloutRE.FindStringSubmatch(filepath.Base(p)); m != nil && strings.EqualFold(m[1], threadID) {
			return p, nil
		}
	}
	return "", fmt.Errorf("realcodex: rollout of thread %s: %w", threadID, fs.ErrNotExist)
}

// Env returns the environment to run Codex with: the test's environment
// without OpenAI/Codex credentials and settings, plus CODEX_HOME, HOME (the
// empty [Home.UserHome]), MOCK_API_KEY, RUST_LOG and the leak-check tag
// [TagEnv].
func (h *Home) Env() []string {
	drop := map[string]bool{"OPENAI_API_KEY": true, "OPENAI_BASE_URL": true, "OPENAI_ORG_ID": true,
		"OPENAI_PROJECT": true, "RUST_LOG": true, TagEnv: true, "HOME": true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "CODEX_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"CODEX_HOME="+h.Dir,
		"HOME="+h.UserHome,
		"MOCK_API_KEY=sk-mock",
		"RUST_LOG="+h.rustLog,
		TagEnv+"="+h.Dir,
	)
}

// homesDir returns the folder for CODEX_HOMEs (see [homesDirFor]).
func homesDir() (string, error) {
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	return homesDirFor(wd, home)
}

// homesDirFor returns the folder for CODEX_HOMEs, never under the temp
// dir: <repo>/.cache/realcodex (the repo found by walking up from wd to
// go.work), else <home>/.cache/atm-agent-mcp-test, else
// /var/tmp/atm-agent-mcp-test-<uid> (not the temp dir Codex checks, which
// is $TMPDIR or /tmp), the first one that is outside the temp dir and can
// be made. A clone under /tmp with a HOME under /tmp gets the last.
func homesDirFor(wd, home string) (string, error) {
	var candidates []string
	if wd != "" {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
				candidates = append(candidates, filepath.Join(d, ".cache", "realcodex"))
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if home != "" {
		candidates = append(candidates, filepath.Join(home, ".cache", "atm-agent-mcp-test"))
	}
	candidates = append(candidates, filepath.Join("/var/tmp", "atm-agent-mcp-test-"+strconv.Itoa(os.Getuid())))
	var tried []string
	for _, c := range candidates {
		if underTemp(c) {
			tried = append(tried, c+" (under the temp dir)")
			continue
		}
		if err := os.MkdirAll(c, 0o700); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", c, err))
			continue
		}
		// Codex reports its home with symbolic links resolved (a .cache
		// that links to another checkout's): the tests compare it with
		// Home.Dir, so resolve them here, and check the real place.
		if resolved, err := filepath.EvalSymlinks(c); err == nil && !underTemp(resolved) {
			return resolved, nil
		}
		return c, nil
	}
	return "", fmt.Errorf("no folder for CODEX_HOME outside the temp dir, where Codex refuses to create its helper binaries; tried %s", strings.Join(tried, ", "))
}

func underTemp(p string) bool {
	for _, tmp := range []string{"/tmp", os.TempDir()} {
		if rel, err := filepath.Rel(tmp, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// shortName turns a test name into a short file-name-safe word.
func shortName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 24 {
			break
		}
	}
	return b.String()
}

// waitGrace is how long the leak check lets processes finish exiting.
var waitGrace = 5 * time.Second
