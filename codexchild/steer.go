package codexchild

import (
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// steerRefusal reads Codex's refusal of turn/steer: the running turn had
// ended ("no active turn to steer", "expected active turn id `X` but found
// `Y`": measured on 0.171.0) or something else was wrong.
func steerRefusal(e *jsonrpcframe.Error) backend.SteerRefusal {
	switch {
	case strings.HasPrefix(e.Message, "no active turn"), strings.HasPrefix(e.Message, "expected active turn id"):
		return backend.SteerTurnEnded
	case strings.HasPrefix(e.Message, "thread not found"):
		return backend.SteerNoTurn
	}
	return backend.SteerRefused
}
