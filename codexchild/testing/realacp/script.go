package realacp

import (
	"encoding/json"
	"strings"
)

// The keywords of the last user message that script the mocks' model.
const (
	// KeyHang makes the model's answer stall (a turn to interrupt).
	KeyHang = "HANG"
	// KeyRunTool makes the model call the agent's shell tool with
	// RunToolCommand (the agent asks for permission first).
	KeyRunTool = "RUN-TOOL"
	// KeyCallTool, on a line "CALL-TOOL <suffix> <json arguments>", makes
	// the model call the tool whose name ends with suffix (agents mangle
	// MCP tool names: opencode's teammail_send_team_mail, Claude's
	// mcp__teammail__send_team_mail), with those arguments.
	KeyCallTool = "CALL-TOOL"
)

// RunToolCommand is the shell command of [KeyRunTool]: it leaves ran.txt
// in the agent's working directory and prints acp-approved.
const RunToolCommand = "touch ran.txt && echo acp-approved"

// shellTools are the names of the agents' shell tools, in the order tried.
var shellTools = []string{"Bash", "bash", "run_shell_command", "shell"}

// move is what a scripted model does with one request of the main
// conversation: say Text, call Tool with Args, or hang.
type move struct {
	Text string
	Tool string
	Args any
	Hang bool
}

// script decides the model's move from the last user message's text, the
// tool results that follow the model's last message, and the tools the
// request offers:
//
//   - after tool results, "TOOL RESULT: <results joined by |>";
//   - HANG: hang;
//   - CALL-TOOL <suffix> <json>: call the tool whose name ends with suffix
//     ("NO TOOL ENDING IN <suffix>" when none does);
//   - RUN-TOOL: call the shell tool with [RunToolCommand];
//   - else "REPLY TO <the prompt from its last TURN on>".
func script(prompt string, results []string, tools []string) move {
	if len(results) > 0 {
		trimmed := make([]string, len(results))
		for i, r := range results {
			trimmed[i] = strings.TrimSpace(r)
		}
		return move{Text: "TOOL RESULT: " + strings.Join(trimmed, " | ")}
	}
	if strings.Contains(prompt, KeyHang) {
		return move{Hang: true}
	}
	if i := strings.Index(prompt, KeyCallTool+" "); i >= 0 {
		line, _, _ := strings.Cut(prompt[i+len(KeyCallTool)+1:], "\n")
		suffix, rawArgs, _ := strings.Cut(strings.TrimSpace(line), " ")
		var args map[string]any
		if json.Unmarshal([]byte(rawArgs), &args) != nil {
			args = map[string]any{}
		}
		for _, name := range tools {
			if strings.HasSuffix(name, suffix) {
				return move{Tool: name, Args: args}
			}
		}
		return move{Text: "NO TOOL ENDING IN " + suffix}
	}
	if strings.Contains(prompt, KeyRunTool) {
		for _, shell := range shellTools {
			for _, name := range tools {
				if name == shell {
					return move{Tool: name, Args: map[string]any{"command": RunToolCommand, "description": "Create ran.txt"}}
				}
			}
		}
		return move{Text: "NO SHELL TOOL"}
	}
	return move{Text: "REPLY TO " + fromLastTurn(prompt)}
}

// fromLastTurn returns the prompt from its last "TURN" on, trimmed.
func fromLastTurn(prompt string) string {
	if i := strings.LastIndex(prompt, "TURN"); i >= 0 {
		prompt = prompt[i:]
	}
	return strings.TrimSpace(prompt)
}
