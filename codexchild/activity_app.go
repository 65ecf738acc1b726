package codexchild

import (
	"encoding/json"
)

// appActivity translates an app-server notification (its method in
// e.Type). Only the methods worth a summary are decoded.
func appActivity(e Event) Activity {
	switch e.Type {
	case "turn/started":
		return Activity{Kind: ActivityTurnStarted}
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
			return Activity{Kind: ActivityProblem, Text: p.Error.Message, Retrying: p.WillRetry}
		}
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage json.RawMessage `json:"tokenUsage"`
		}
		if json.Unmarshal(e.Params, &p) == nil && len(p.TokenUsage) > 0 {
			return Activity{Kind: ActivityTokens, Tokens: p.TokenUsage}
		}
	}
	return Activity{}
}

// appItem translates item/started and item/completed: an agent message
// once complete, a command, a file change or a tool call; any other item
// is named by its type.
func appItem(e Event) Activity {
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
		} `json:"item"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return Activity{}
	}
	it := p.Item
	item := &Item{ID: it.ID, Status: it.Status, Started: e.Type == "item/started"}
	switch it.Type {
	case "agentMessage":
		if e.Type == "item/completed" {
			return Activity{Kind: ActivityMessage, Text: it.Text}
		}
		return Activity{}
	case "commandExecution":
		item.Type, item.Summary = "command", shortCommand(it.Command)
	case "fileChange":
		item.Type, item.Summary = "file_change", files(len(it.Changes))
	case "mcpToolCall":
		item.Type, item.Summary = "tool_call", it.Server+"."+it.Tool
	default:
		return Activity{Summary: it.Type}
	}
	return Activity{Kind: ActivityItem, Item: item}
}
