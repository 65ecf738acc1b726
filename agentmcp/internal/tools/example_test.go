package tools_test

import (
	"encoding/json"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
)

// The tools `serve` lists, with the arguments each requires.
func Example() {
	var defs []struct {
		Name        string `json:"name"`
		InputSchema struct {
			Required []string `json:"required"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(tools.Definitions, &defs); err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range defs {
		fmt.Println(d.Name, d.InputSchema.Required)
	}
	// Output:
	// codex []
	// codex-reply [prompt]
	// atm_send [to message]
	// atm_read []
	// atm_broadcast [message]
	// atm_pending_count []
	// agent_sessions []
	// agent_status []
	// agent_close []
	// agent_wait [agent_id]
	// agent_interrupt [agent_id]
	// agent_respond [agent_id answer]
	// agent_list_codex_sessions []
	// agent_restart_codex []
	// agent_start []
	// agent_reply [agent_id prompt]
	// agent_diff [agent_id]
	// agent_merge [agent_id]
	// agent_fork [agent_id identity]
}
