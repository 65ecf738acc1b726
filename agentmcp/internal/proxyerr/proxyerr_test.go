package proxyerr_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
)

func TestToWire(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want map[string]any
	}{
		{"proxy error with data", proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"agent_id": "a-1"}, "no session with agent_id %q", "a-1"),
			map[string]any{"code": -32002.0, "message": `no session with agent_id "a-1"`,
				"data": map[string]any{"agent_id": "a-1", "error_code": "SESSION_NOT_FOUND", "error_source": "proxy"}}},
		{"wrapped proxy error", fmt.Errorf("turn: %w", proxyerr.New(proxyerr.ErrRequestTimeout, nil, "timed out")),
			map[string]any{"code": -32006.0, "message": "turn: timed out",
				"data": map[string]any{"error_code": "REQUEST_TIMEOUT", "error_source": "proxy"}}},
		{"bare kind", proxyerr.ErrInvalidParams,
			map[string]any{"code": -32602.0, "message": "INVALID_PARAMS",
				"data": map[string]any{"error_code": "INVALID_PARAMS", "error_source": "proxy"}}},
		{"plain error", context.Canceled,
			map[string]any{"code": -32603.0, "message": "context canceled", "data": map[string]any{"error_source": "proxy"}}},
		{"child error", &proxyerr.ChildError{Raw: json.RawMessage(`{"code":-32601,"message":"nope"}`)},
			map[string]any{"code": -32601.0, "message": "nope",
				"data": map[string]any{"error_source": "child", "child_error": map[string]any{"code": -32601.0, "message": "nope"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(proxyerr.ToWire(tt.err))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ToWire (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIs(t *testing.T) {
	err := fmt.Errorf("close: %w", proxyerr.New(proxyerr.ErrSessionClosed, nil, "session s is closed"))
	if !errors.Is(err, proxyerr.ErrSessionClosed) {
		t.Error("errors.Is(err, ErrSessionClosed) = false, want true")
	}
	if errors.Is(err, proxyerr.ErrSessionNotFound) {
		t.Error("errors.Is(err, ErrSessionNotFound) = true, want false")
	}
	if got := proxyerr.ErrSessionClosed.Code(); got != proxyerr.CodeSessionClosed {
		t.Errorf("Code() = %d, want %d", got, proxyerr.CodeSessionClosed)
	}
}

// TestWrapKeepsCause: a wrapped error is of its kind and still finds the
// error underneath; the client sees only the message.
func TestWrapKeepsCause(t *testing.T) {
	cause := &os.PathError{Op: "open", Path: "codex", Err: os.ErrNotExist}
	err := fmt.Errorf("turn: %w", proxyerr.Wrap(proxyerr.ErrChildProcessDead, cause, nil, "codex is down"))
	if !errors.Is(err, proxyerr.ErrChildProcessDead) {
		t.Error("errors.Is(err, ErrChildProcessDead) = false, want true")
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe != cause {
		t.Errorf("errors.As(err, *os.PathError) = %v, want the cause", pe)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Error("errors.Is(err, os.ErrNotExist) = false, want true")
	}
	if got, want := proxyerr.ToWire(err).Message, "turn: codex is down"; got != want {
		t.Errorf("ToWire message = %q, want %q", got, want)
	}
}

func ExampleToWire() {
	err := proxyerr.New(proxyerr.ErrIdentityConflict, map[string]any{"identity": "arch"}, "identity conflict: %q is taken", "arch")
	w := proxyerr.ToWire(err)
	fmt.Println(w.Code, w.Message, string(w.Data))
	// Output: -32001 identity conflict: "arch" is taken {"error_code":"IDENTITY_CONFLICT","error_source":"proxy","identity":"arch"}
}
