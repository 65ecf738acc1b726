package realcodex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Environment of a test binary re-executed as a tool server.
const (
	roleEnv     = "ATM_REALCODEX_ROLE"
	identityEnv = "ATM_REALCODEX_IDENTITY"
	toolLogEnv  = "ATM_REALCODEX_TOOL_LOG"
	roleTools   = "toolserver"
)

// EchoToolName is the one tool the tool server offers. Its input is
// {"text": string}; it answers with one text content
// "identity=<identity> thread=<_meta.threadId> text=<text>".
const EchoToolName = "echo_identity"

// MaybeServeTools must be called first in the TestMain of a test binary that
// uses [Home.ToolServer]. When the process was started by Codex as such a tool
// server, it serves MCP on stdin/stdout until stdin reaches EOF and exits;
// otherwise it returns at once.
func MaybeServeTools() {
	if os.Getenv(roleEnv) != roleTools {
		return
	}
	var log io.Writer = io.Discard
	if p := os.Getenv(toolLogEnv); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "realcodex tool server:", err)
			os.Exit(1)
		}
		defer f.Close()
		log = f
	}
	if err := ServeEchoTool(os.Stdin, os.Stdout, os.Getenv(identityEnv), log); err != nil {
		fmt.Fprintln(os.Stderr, "realcodex tool server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ToolServer returns the value of an mcp_servers.<name> entry of a thread's
// config that makes Codex start this test binary as a stdio MCP server
// offering [EchoToolName] bound to identity, with its calls auto-approved and
// the thread waiting for it (default_tools_approval_mode "approve",
// required true). Every call it receives is logged; read them with
// [Home.ToolCalls]. The test binary's TestMain must call [MaybeServeTools].
func (h *Home) ToolServer(identity string) map[string]any {
	h.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		h.t.Fatalf("realcodex: %v", err)
	}
	if err := os.MkdirAll(h.LogDir(), 0o700); err != nil {
		h.t.Fatalf("realcodex: %v", err)
	}
	return map[string]any{
		"command": exe,
		// Should TestMain lack MaybeServeTools, run no test and exit.
		"args": []any{"-test.run=^$"},
		"env": map[string]any{
			roleEnv:     roleTools,
			identityEnv: identity,
			toolLogEnv:  h.toolLogPath(identity),
			TagEnv:      h.Dir,
		},
		"default_tools_approval_mode": "approve",
		"required":                    true,
	}
}

func (h *Home) toolLogPath(identity string) string {
	return filepath.Join(h.LogDir(), "toolserver-"+shortName(identity)+".jsonl")
}

// ToolCall is one tools/call a tool server received.
type ToolCall struct {
	Identity  string         `json:"identity"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	Meta      map[string]any `json:"_meta"`
}

// ToolCalls returns the calls the tool server of identity received, in
// order; none (and no error) before the first.
func (h *Home) ToolCalls(identity string) ([]ToolCall, error) {
	b, err := os.ReadFile(h.toolLogPath(identity))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []ToolCall
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c ToolCall
		if err := json.Unmarshal(line, &c); err != nil {
			return calls, fmt.Errorf("realcodex: tool call log: %w", err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// ServeEchoTool serves a minimal MCP tool server over NDJSON: initialize,
// ping, tools/list and tools/call for [EchoToolName]; other requests get
// -32601, notifications are ignored. Each tools/call is written to log as one
// JSON line ([ToolCall]). It returns nil at EOF of r.
func ServeEchoTool(r io.Reader, w io.Writer, identity string, log io.Writer) error {
	br := bufio.NewReader(r)
	enc := json.NewEncoder(w)
	var logMu sync.Mutex
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if jerr := json.Unmarshal(line, &m); jerr == nil && m.Method != "" && len(m.ID) > 0 {
				result, rpcErr := handleTool(m.Method, m.Params, identity, func(c ToolCall) {
					logMu.Lock()
					defer logMu.Unlock()
					b, _ := json.Marshal(c)
					_, _ = log.Write(append(b, '\n'))
				})
				resp := map[string]any{"jsonrpc": "2.0", "id": m.ID}
				if rpcErr != nil {
					resp["error"] = rpcErr
				} else {
					resp["result"] = result
				}
				if werr := enc.Encode(resp); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func handleTool(method string, params json.RawMessage, identity string, logCall func(ToolCall)) (any, map[string]any) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "realcodex-echo", "version": "0.0.1"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": []any{map[string]any{
			"name":        EchoToolName,
			"description": "Echo the text with the identity this server was started with.",
			"inputSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"text": map[string]any{"type": "string"}},
			},
		}}}, nil
	case "tools/call":
		var c ToolCall
		if err := json.Unmarshal(params, &c); err != nil {
			return nil, map[string]any{"code": -32602, "message": "invalid params: " + err.Error()}
		}
		c.Identity = identity
		logCall(c)
		if c.Name != EchoToolName {
			return map[string]any{"isError": true,
				"content": []any{map[string]any{"type": "text", "text": "unknown tool " + c.Name}}}, nil
		}
		text, _ := c.Arguments["text"].(string)
		thread, _ := c.Meta["threadId"].(string)
		out := strings.Join([]string{"identity=" + identity, "thread=" + thread, "text=" + text}, " ")
		return map[string]any{"isError": false, "content": []any{map[string]any{"type": "text", "text": out}}}, nil
	}
	return nil, map[string]any{"code": -32601, "message": "method not found: " + method}
}
