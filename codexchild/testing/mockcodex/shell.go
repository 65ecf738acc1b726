package mockcodex

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runShell runs cmd with /bin/bash -lc in cwd, env added to the mock's
// own environment, and formats the output the way
// Codex's exec_command reports it to the model. It returns an error only when
// ctx ended the command.
func runShell(ctx context.Context, cwd, cmd string, env []string) (execResult, error) {
	start := time.Now()
	c := exec.CommandContext(ctx, "/bin/bash", "-lc", cmd)
	c.Dir = cwd
	if len(env) > 0 {
		c.Env = append(os.Environ(), env...)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if ctx.Err() != nil {
		return execResult{}, ctx.Err()
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if code < 0 {
			code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
	case err != nil:
		code = 127
		out.WriteString(err.Error())
	}
	dur := time.Since(start)
	var chunk [3]byte
	_, _ = rand.Read(chunk[:])
	text := out.String()
	formatted := fmt.Sprintf("Chunk ID: %s\nWall time: %.4f seconds\nProcess exited with code %d\nOriginal token count: %d\nOutput:\n%s",
		hex.EncodeToString(chunk[:]), dur.Seconds(), code, (len(text)+3)/4, text)
	return execResult{output: text, exitCode: code, duration: dur, formatted: formatted}, nil
}

// patchCommand is mockmodel.PatchCommand: the apply_patch heredoc adding path.
func patchCommand(path, content string) string {
	var b strings.Builder
	b.WriteString("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ")
	b.WriteString(path)
	b.WriteString("\n")
	for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + line + "\n")
	}
	b.WriteString("*** End Patch\nEOF")
	return b.String()
}

// parsePatch recognises an "apply_patch <<'EOF'" command that adds one file,
// as Codex intercepts it from exec_command.
func parsePatch(cmd, cwd string) (*patchCall, bool) {
	if !strings.HasPrefix(strings.TrimSpace(cmd), "apply_patch") {
		return nil, false
	}
	lines := strings.Split(cmd, "\n")
	pc := &patchCall{}
	var content []string
	in := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "*** Add File: "):
			pc.shown = strings.TrimSpace(strings.TrimPrefix(l, "*** Add File: "))
			in = true
		case strings.HasPrefix(l, "*** End Patch"):
			in = false
		case in && strings.HasPrefix(l, "+"):
			content = append(content, l[1:])
		}
	}
	if pc.shown == "" {
		return nil, false
	}
	pc.abs = pc.shown
	if !filepath.IsAbs(pc.abs) {
		pc.abs = filepath.Join(cwd, pc.abs)
	}
	pc.content = strings.Join(content, "\n") + "\n"
	return pc, true
}

func applyPatch(pc *patchCall) error {
	if err := os.MkdirAll(filepath.Dir(pc.abs), 0o755); err != nil {
		return err
	}
	return os.WriteFile(pc.abs, []byte(pc.content), 0o644)
}

// unifiedDiff is the turn_diff of adding the file, like Codex's git-style
// diff (with the doubled slash it writes for absolute paths).
func unifiedDiff(pc *patchCall) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00%s", len(pc.content), pc.content)
	lines := strings.Split(strings.TrimSuffix(pc.content, "\n"), "\n")
	rng := "1"
	if len(lines) != 1 {
		rng = fmt.Sprintf("1,%d", len(lines))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..%x\n--- /dev/null\n+++ b/%s\n@@ -0,0 +%s @@\n",
		pc.abs, pc.abs, h.Sum(nil), pc.abs, rng)
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// rulesPath is where approved_execpolicy_amendment rules go.
func (p *process) rulesPath() string {
	return filepath.Join(p.opts.codexHome, "rules", "default.rules")
}

// addRule appends prefix_rule(pattern=[...], decision="allow") like Codex.
func (p *process) addRule(pattern []string) {
	if len(pattern) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(p.rulesPath()), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(p.rulesPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(pattern)
	fmt.Fprintf(f, "prefix_rule(pattern=%s, decision=\"allow\")\n", strings.ReplaceAll(string(b), `","`, `", "`))
}

// ruleAllows reports whether a prefix rule in default.rules allows cmd.
func (p *process) ruleAllows(cmd string) bool {
	b, err := os.ReadFile(p.rulesPath())
	if err != nil {
		return false
	}
	f := strings.Fields(cmd)
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, "pattern=[")
		j := strings.Index(line, "]")
		if i < 0 || j < i || !strings.Contains(line, `decision="allow"`) {
			continue
		}
		var pat []string
		if json.Unmarshal([]byte(line[i+len("pattern="):j+1]), &pat) != nil || len(pat) == 0 || len(pat) > len(f) {
			continue
		}
		match := true
		for k := range pat {
			if pat[k] != f[k] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
