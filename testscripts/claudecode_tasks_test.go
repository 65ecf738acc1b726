//go:build linux

package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeTasks runs the real interactive Claude Code 2.1.332 in a
// pty, where it uses MCP Tasks (the io.modelcontextprotocol/tasks
// extension; -p does not). The model's codex call comes back from serve as
// a task: Claude Code moves it to its background tasks, polls tasks/get,
// and brings the model the turn's result in a task notification when it
// completes. A codex-reply with a long turn, also a task, is then stopped
// — by the model (TaskStop), or by the user in the TUI's task view (↓,
// Enter, x), which shows serve's statusMessage — and Claude Code sends
// tasks/cancel: serve interrupts the Codex turn (Codex is told, the audit
// has it). An approval the agent asks during a task is shown as Claude
// Code's form and its Accept reaches Codex (tasks/update). Esc does not stop a task Claude Code has moved to the
// background; it only ends the model's turn.
func TestClaudeCodeTasks(t *testing.T) {
	t.Parallel()
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("stopped-by-the-model", func(t *testing.T) { claudeTasks(t, claude, mockcodexBin, stopByModel) })
	t.Run("stopped-in-the-tui", func(t *testing.T) { claudeTasks(t, claude, mockcodexBin, stopInTUI) })
	t.Run("approved-in-the-tui", func(t *testing.T) { claudeTasks(t, claude, mockcodexBin, approveInTUI) })
}

// The sessions of TestClaudeCodeTasks.
const (
	stopByModel  = iota // the model stops the long task with TaskStop
	stopInTUI           // the user stops it in the task view
	approveInTUI        // the first task asks an approval, which the user gives in Claude Code's form
)

// claudeTasks is one interactive session of TestClaudeCodeTasks.
func claudeTasks(t *testing.T, claude, mockcodexBin string, mode int) {
	inTUI := mode == stopInTUI
	dir := t.TempDir()
	home := filepath.Join(dir, "home") // Claude Code's HOME, and serve's
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	makeTeam(t, home, "team-lead", "arch")
	seedClaudeJSON(t, home, work)
	serveLog := filepath.Join(dir, "serve.log")
	childLog := filepath.Join(dir, "child.jsonl")
	debugLog := filepath.Join(dir, "claude-debug.log")
	mcpFile := writeServeMCPConfig(t, dir, home, claudeRun{backend: "app-server", codexBin: mockcodexBin,
		env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}}, serveLog, "--team", "dev", "--identity", "team-lead", "--approval-policy", "on-request")

	nonce := randomHex(t, 6)
	first := "FIRST-" + nonce
	firstPrompt := first + " say hello"
	firstReply := "MOCK_REPLY: " + first
	if mode == approveInTUI {
		firstPrompt = "RUN_SHELL ESCALATE CMD=echo " + first
		firstReply = "Output:\\n" + first // the command's output, as the model reads it in JSON
	}
	long := "SLOW=60 LONG-" + nonce
	stopRe := regexp.MustCompile(`TaskStop with task_id "([^"]+)"`)
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		last := allText(r) // a task's notification is not always in the last message
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__codex-reply,TaskStop", "max_results": 10}}}
		case r.called("mcp__codex__codex") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": firstPrompt, "identity": "arch"}}}
		case r.called("mcp__codex__codex-reply") == 0 && !strings.Contains(last, firstReply):
			return []mockBlock{{Text: "WAITING FOR ARCH"}} // the task's notification starts the next turn
		case mode == approveInTUI:
			return []mockBlock{{Text: "APPROVED TASK DONE"}}
		case r.called("mcp__codex__codex-reply") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": agentIDRe.FindString(last), "prompt": long}}}
		case inTUI:
			return []mockBlock{{Text: "LONG ONE STARTED"}}
		case r.called("TaskStop") == 0:
			var id string // the long turn's: the last one named
			for _, m := range stopRe.FindAllStringSubmatch(last, -1) {
				id = m[1]
			}
			return []mockBlock{{Tool: "TaskStop", Input: map[string]any{"task_id": id}}}
		}
		return []mockBlock{{Text: "LONG TASK STOPPED"}}
	})

	cmd := exec.Command(claude, "--mcp-config", mcpFile, "--strict-mcp-config", "--permission-mode", "default",
		"--allowedTools", "mcp__codex,ToolSearch,TaskStop", "--debug-file", debugLog)
	cmd.Dir = work
	cmd.Env = claudeEnv(home, api.URL(), "TERM=xterm-256color", "COLUMNS=160", "LINES=50", "IS_SANDBOX=1")
	start := time.Now()
	p := startPTY(t, cmd, 160, 50)
	step := func(format string, args ...any) {
		t.Logf("%5.1fs: %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dump := func() {
		for _, r := range api.requests() {
			t.Logf("model request %d: main %v, %d tools, %d messages", r.N, r.Main, len(r.Tools), len(r.Messages))
			for i, mm := range r.Messages {
				for _, b := range mm.Blocks {
					if b.Type == "tool_use" || b.Type == "tool_result" || strings.Contains(b.Text, "task-notification") {
						t.Logf("model request %d, message %d (%s): %s %s %s", r.N, i, mm.Role, b.Type, b.Name, clipLog(string(b.Input)+b.Text, 800))
					}
				}
			}
		}
		t.Logf("screen (last 6000 bytes):\n%s", clipLog(p.screen(), 6000))
		logTail(t, "serve's log", serveLog, 15000)
		logTail(t, "claude's debug log (MCP)", debugLog, 15000, "MCP", "task", "rror")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			dump()
			t.Fatal(err)
		}
	}
	must(p.waitScreen(regexp.MustCompile(`for shortcuts`), 0, 30*time.Second))
	step("ready")
	p.typeLine("Start arch on the first job, then give it the long one.")

	// The codex call is a task: Claude Code moves it to the background,
	// polls it, and tells the model its result when it completes.
	if mode == approveInTUI {
		// The agent's approval: the task is input_required, Claude Code
		// shows serve's form; Accept answers it with tasks/update.
		must(p.waitScreen(regexp.MustCompile(`requests your input`), 0, 60*time.Second))
		must(p.waitScreen(regexp.MustCompile("Allow Codex to run `echo "+first), 0, 10*time.Second))
		step("Claude Code shows the approval's form")
		mark := len(p.raw())
		for _, key := range []string{"\x1b[B", "\x1b[B"} { // past the form's two fields, to Accept
			p.typeText(key)
			time.Sleep(300 * time.Millisecond)
		}
		must(p.waitScreen(regexp.MustCompile(`❯ Accept`), mark, 10*time.Second))
		p.typeText("\r")
		must(p.waitFor("Codex's approval answered", 30*time.Second, func() bool { return fileHas(childLog, `"decision":"accept"`) }))
		step("the approval reached Codex")
	}
	must(p.waitFor("the first task's result at the model", 60*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && strings.Contains(allText(r), "<task-notification>") && strings.Contains(allText(r), firstReply)
	}))
	step("the model has the first task's result")
	if n := len(grepLines(serveLog, "codex turn runs as an MCP task")); n < 1 {
		t.Errorf("serve made %d tasks, want the codex call's", n)
	}
	if res := api.lastMain().results(); len(res) == 0 || !strings.Contains(res[len(res)-1].Text, "started server-side task task-") {
		t.Errorf("the codex call's own result does not name serve's task: %+v", res)
	}

	if mode == approveInTUI {
		must(p.waitScreen(regexp.MustCompile(`APPROVED TASK DONE`), 0, 60*time.Second))
		return
	}

	// The long turn is a task too; stopping it sends tasks/cancel and
	// serve interrupts the Codex turn.
	must(p.waitFor("the long turn at Codex", 60*time.Second, func() bool { return fileHas(childLog, "LONG-"+nonce) }))
	step("the long turn runs")
	if inTUI {
		must(p.waitScreen(regexp.MustCompile(`LONG ONE STARTED`), 0, 30*time.Second))
		// The footer's "↓ to manage" selects the tasks (the TUI may still be
		// settling after the model's turn: press again until it does).
		mark := len(p.raw())
		for i := 0; ; i++ {
			p.typeText("\x1b[B")
			err := p.waitScreen(regexp.MustCompile(`to view tasks`), mark, 3*time.Second)
			if err == nil {
				break
			}
			if i == 4 {
				must(err)
			}
		}
		p.typeText("\r")
		must(p.waitScreen(regexp.MustCompile(`x to stop`), mark, 10*time.Second))
		view := p.screen()[len(stripANSI(p.raw()[:mark])):]
		for _, want := range []string{"codex/codex-reply", "Status: working · [arch] ", "checks every 1s", "Server task: task-"} {
			if !strings.Contains(view, want) {
				t.Errorf("the task view lacks %q:\n%s", want, clipLog(view, 3000))
			}
		}
		step("the task view shows serve's task")
		p.typeText("x")
	}
	must(p.waitFor("tasks/cancel at serve", 60*time.Second, func() bool { return fileHas(serveLog, "tasks/cancel: interrupting the task's turn") }))
	step("tasks/cancel came")
	must(p.waitFor("Codex told to interrupt", 30*time.Second, func() bool { return fileHas(childLog, "turn/interrupt") }))
	step("Codex was told to interrupt the turn")
	audit := filepath.Join(home, ".config", "atm", "agent-sessions", "dev", "audit.jsonl")
	must(p.waitFor("the interrupt in the audit", 30*time.Second, func() bool { return fileHas(audit, `"event":"turn_interrupted"`) }))
	if !inTUI {
		must(p.waitScreen(regexp.MustCompile(`LONG TASK STOPPED`), 0, 60*time.Second))
		step("the model went on")
	}
	if t.Failed() {
		dump()
	}
}

// allText is the text of every message of the request, oldest first.
func allText(r *modelRequest) string {
	var b strings.Builder
	for _, mm := range r.Messages {
		b.WriteString(mm.text())
	}
	return b.String()
}
