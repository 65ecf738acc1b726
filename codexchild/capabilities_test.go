package codexchild

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestAutoCapabilities: the auto backend has every optional capability's
// method, and answers ErrUnsupported for what the protocol it chose cannot
// do (mcp-server: no steer, fork or structured output), so that a caller
// falls back; on app-server it delegates.
func TestAutoCapabilities(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    map[string]bool // capability → ErrUnsupported
	}{
		{TestedMCPServerCodex, map[string]bool{"steer": true, "fork": true, "structured_output": true}},
		{TestedAppServerCodex, map[string]bool{"steer": false, "fork": false, "structured_output": false}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			dir := t.TempDir()
			b := newTestBackend(t, Config{Bin: mockBin(t), Dir: dir, Kind: KindAuto,
				Env: []string{"MOCKCODEX_VERSION=" + tc.version, "CODEX_HOME=" + dir}})
			ctx := ctxFor(t, 30*time.Second)
			got := map[string]bool{}
			err := b.(backend.Steerer).Steer(ctx, "01a1ffa3-0000-7000-8000-000000000000", "x")
			got["steer"] = errors.Is(err, backend.ErrUnsupported)
			_, err = b.(backend.Forker).Fork(ctx, backend.ForkRequest{ThreadID: "01a1ffa3-0000-7000-8000-000000000000"})
			got["fork"] = errors.Is(err, backend.ErrUnsupported)
			got["structured_output"] = errors.Is(b.(backend.StructuredOutputter).StructuredOutput(ctx), backend.ErrUnsupported)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ErrUnsupported per capability (-want +got):\n%s", diff)
			}
		})
	}
}
