package mockcodex

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// threadCore is the state of a thread both protocols share.
type threadCore struct {
	id             string
	cwd            string
	approvalPolicy string // on-request | never | untrusted (app-server)
	sandbox        string // read-only | workspace-write | danger-full-access
	model          string
	rollout        *rollout
	// env is what the thread's config shell_environment_policy.set adds
	// to the environment of its commands (NAME=value).
	env []string

	mu          sync.Mutex
	allowedCmds map[string]bool // commands approved for the session
	servers     map[string]*toolServer
	order       []string // server names in config order
	usage       int      // model responses so far (each is 120 in + 12 out tokens)
	said        []string // the user texts of the thread, in order (RECALL)

	// lastToolOutput is set and read by the turn goroutine only.
	lastToolOutput string
}

func newThreadCore(id, cwd, policy, sandbox, model string) *threadCore {
	return &threadCore{id: id, cwd: cwd, approvalPolicy: policy, sandbox: sandbox, model: model,
		allowedCmds: map[string]bool{}, servers: map[string]*toolServer{}}
}

func (t *threadCore) addUsage() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.usage++
}

func (t *threadCore) responses() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.usage
}

// say records a user text of the thread.
func (t *threadCore) say(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.said = append(t.said, text)
}

// recall returns the thread's user texts before the last one: what the
// model was told in earlier turns (RECALL).
func (t *threadCore) recall() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.said) == 0 {
		return nil
	}
	return append([]string(nil), t.said[:len(t.said)-1]...)
}

// saidIn returns the user texts of saved turns (a resumed or forked
// thread's history).
func saidIn(turns []savedTurn) []string {
	var said []string
	for _, t := range turns {
		for _, it := range t.items {
			if m, ok := it.(obj); ok && m[0].v == "userMessage" {
				said = append(said, firstText(m))
			}
		}
	}
	return said
}

func (t *threadCore) allow(cmd string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.allowedCmds[cmd] = true
}

// allowed reports whether cmd was approved for the session.
func (t *threadCore) allowed(cmd string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.allowedCmds[cmd]
}

func (t *threadCore) server(name string) *toolServer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.servers[name]
}

// patchNeedsApproval tells whether writing abs needs approval: outside the
// writable roots (cwd, /tmp, $TMPDIR) under workspace-write, always under
// read-only, never under danger-full-access.
func (t *threadCore) patchNeedsApproval(abs string) bool {
	switch t.sandbox {
	case "danger-full-access":
		return false
	case "read-only":
		return true
	}
	for _, root := range []string{t.cwd, "/tmp", os.TempDir()} {
		if root == "" {
			continue
		}
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return false
		}
	}
	return true
}

// usageObj is a token usage of n model responses.
func usageObj(n int) obj {
	return o("input_tokens", 120*n, "cached_input_tokens", 0, "cache_write_input_tokens", 0,
		"output_tokens", 12*n, "reasoning_output_tokens", 0, "total_tokens", 132*n)
}

// tokenInfo is the token_count info of a thread (nil before any response).
func (t *threadCore) tokenInfo() any {
	n := t.responses()
	if n == 0 {
		return nil
	}
	return o("total_token_usage", usageObj(n), "last_token_usage", usageObj(1), "model_context_window", 258400)
}

func (t *threadCore) stopServers() {
	t.mu.Lock()
	servers := t.servers
	t.servers = map[string]*toolServer{}
	t.mu.Unlock()
	for _, s := range servers {
		s.stop()
	}
}

// shellEnv returns the variables of an expanded thread config's
// shell_environment_policy.set as NAME=value, sorted: the real Codex sets
// them in the environment of every command the thread runs.
func shellEnv(cfg map[string]any) []string {
	pol, _ := cfg["shell_environment_policy"].(map[string]any)
	set, _ := pol["set"].(map[string]any)
	var env []string
	for _, k := range sortedKeys(set) {
		if v, ok := set[k].(string); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
