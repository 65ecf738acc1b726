package codexchild

import (
	"encoding/json"
	"sort"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// appActivity translates an app-server notification (its method in
// e.Type). Only the methods worth a summary are decoded.
func appActivity(e backend.Event) backend.Activity {
	switch e.Type {
	case "turn/started":
		return backend.Activity{Kind: backend.ActivityTurnStarted}
	case "item/started", "item/completed":
		return appItem(e)
	case "error":
		// {error: {message}, willRetry}
		var p struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			WillRetry bool `json:"willRetry"`
		}
		if json.Unmarshal(e.Params, &p) == nil && p.Error.Message != "" {
			return backend.Activity{Kind: backend.ActivityProblem, Text: p.Error.Message, Retrying: p.WillRetry}
		}
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage json.RawMessage `json:"tokenUsage"`
		}
		if json.Unmarshal(e.Params, &p) == nil {
			if u, ok := codexAppUsage(p.TokenUsage); ok {
				return backend.Activity{Kind: backend.ActivityTokens, Usage: u}
			}
		}
	}
	return backend.Activity{}
}

// appItem translates item/started and item/completed: an agent message
// once complete, a command, a file change or a tool call; any other item
// is named by its type.
func appItem(e backend.Event) backend.Activity {
	var p struct {
		Item struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Status  string          `json:"status"`
			Command json.RawMessage `json:"command"`
			Changes []any           `json:"changes"`
			Server  string          `json:"server"`
			Tool    string          `json:"tool"`
			Text    string          `json:"text"`
			// collabAgentToolCall (Codex's own sub-agents; its tool in Tool)
			collabFields
		} `json:"item"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return backend.Activity{}
	}
	it := p.Item
	item := &backend.Item{ID: it.ID, Status: it.Status, Started: e.Type == "item/started"}
	switch it.Type {
	case "agentMessage":
		if e.Type == "item/completed" {
			return backend.Activity{Kind: backend.ActivityMessage, Text: it.Text}
		}
		return backend.Activity{}
	case "commandExecution":
		item.Type, item.Summary = "command", shortCommand(it.Command)
	case "fileChange":
		item.Type, item.Summary = "file_change", files(len(it.Changes))
	case "mcpToolCall":
		item.Type, item.Summary = "tool_call", it.Server+"."+it.Tool
	case "collabAgentToolCall":
		// tool is spawnAgent, sendInput, wait, closeAgent, …; the
		// sub-agents it concerns are its receivers, their states in
		// agentsStates.
		item.Type, item.Summary = "sub_agent", "sub-agent "+it.Tool
		a := backend.Activity{Kind: backend.ActivityItem, Item: item}
		seen := map[string]bool{}
		task := ""
		if it.Tool == "spawnAgent" {
			task = clip(it.Prompt, 200)
		}
		for _, id := range it.Receivers {
			st := it.AgentsStates[id]
			a.SubAgents = append(a.SubAgents, backend.SubAgent{ThreadID: id, ParentThreadID: it.Sender, Task: task, Status: st.Status, Message: clip(st.Message, 200)})
			seen[id] = true
		}
		for id, st := range it.AgentsStates {
			if !seen[id] {
				a.SubAgents = append(a.SubAgents, backend.SubAgent{ThreadID: id, ParentThreadID: it.Sender, Status: st.Status, Message: clip(st.Message, 200)})
			}
		}
		sort.Slice(a.SubAgents, func(i, j int) bool { return a.SubAgents[i].ThreadID < a.SubAgents[j].ThreadID })
		return a
	default:
		return backend.Activity{Summary: it.Type}
	}
	return backend.Activity{Kind: backend.ActivityItem, Item: item}
}
