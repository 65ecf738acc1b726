package mockcodex

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTiming: with MOCKCODEX_TIMING, the file holds when the last request
// was read and when the last response was about to be written, both inside
// the window of the client's last call, in that order, for both servers.
func TestTiming(t *testing.T) {
	tests := []struct {
		mode string
		init func(c *client)
		call func(c *client, dir string) // one request, its response read
	}{
		{"mcp-server", (*client).initialize, func(c *client, dir string) {
			c.call(2, "codex", msg{"prompt": "hello", "cwd": dir})
			c.response(2)
		}},
		{"app-server", (*client).appInit, func(c *client, dir string) {
			c.threadStart(2, msg{"cwd": dir})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "timing")
			c := start(t, testEnv(t, "MOCKCODEX_TIMING", path), tt.mode)
			tt.init(c)
			initReq, initResp := readTiming(t, path)
			if initReq == 0 || initResp < initReq {
				t.Fatalf("after initialize: request read %d, response written %d", initReq, initResp)
			}

			before := time.Now().UnixNano()
			tt.call(c, t.TempDir())
			after := time.Now().UnixNano()
			req, resp := readTiming(t, path)
			if req < before || req > resp || resp > after {
				t.Errorf("call in [%d, %d]: request read at %d, response written at %d; want before <= read <= written <= after",
					before, after, req, resp)
			}
		})
	}

	t.Run("unopenable", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "missing-dir", "timing")
		c := start(t, testEnv(t, "MOCKCODEX_TIMING", path), "mcp-server")
		c.initialize() // it still serves
		if got, want := c.stderr.String(), "mockcodex: MOCKCODEX_TIMING: open "+path; !strings.Contains(got, want) {
			t.Errorf("stderr = %q, want it to contain %q", got, want)
		}
	})
}

// readTiming returns the two times in a MOCKCODEX_TIMING file.
func readTiming(t *testing.T, path string) (requestRead, responseWrite int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 16 {
		t.Fatalf("timing file holds %d bytes, want 16", len(b))
	}
	return int64(binary.LittleEndian.Uint64(b[0:8])), int64(binary.LittleEndian.Uint64(b[8:16]))
}
