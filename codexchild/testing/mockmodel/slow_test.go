package mockmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// openSlow starts a SLOW=60 request and returns once the first keep-alive
// arrived, with the body to read on and a cancel for the request.
func openSlow(t *testing.T, s *Server) (io.ReadCloser, context.CancelFunc) {
	t.Helper()
	raw, _ := json.Marshal(body(msg("user", "SLOW=60 take your time")))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/responses", bytes.NewReader(raw))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			cancel()
			t.Fatalf("read before keep-alive: %v", err)
		}
		if strings.HasPrefix(line, ": keepalive") {
			break
		}
	}
	return resp.Body, cancel
}

func TestSlowStopsWhenClientDisconnects(t *testing.T) {
	s := start(t, Config{KeepAlive: 50 * time.Millisecond})
	b, cancel := openSlow(t, s)
	cancel()
	b.Close()
	// The stream must end within the grace, long before its 60 s.
	checkNoGoroutines(t, "mockmodel.(*Stream).Wait")
}

func TestSlowStopsOnClose(t *testing.T) {
	s, err := Start(Config{KeepAlive: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, cancel := openSlow(t, s)
	defer cancel()
	defer b.Close()
	t0 := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Close took %v with a SLOW stream open", d)
	}
	// The stream ended without its message: the client sees the end of the
	// body (or an error) at once, not after the 60 s wait.
	rest, _ := io.ReadAll(b)
	if strings.Contains(string(rest), "response.completed") {
		t.Errorf("a closed server still completed the SLOW stream: %q", rest)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	checkNoGoroutines(t, "mockmodel.(*Server)", "mockmodel.(*Stream)")
	// After Close nothing is served.
	if _, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader("{}")); err == nil {
		t.Error("POST after Close succeeded")
	}
}

func TestThreadIDAndInFlight(t *testing.T) {
	s := start(t, Config{KeepAlive: 20 * time.Millisecond})
	for _, h := range []struct{ key, value string }{{"thread-id", "T153"}, {"session_id", "T104"}, {"x-other", "none"}} {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/responses", strings.NewReader(`{"input":[]}`))
		req.Header.Set(h.key, h.value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var got []string
	for _, r := range s.Requests() {
		got = append(got, r.ThreadID())
	}
	if diff := cmp.Diff([]string{"T153", "T104", ""}, got); diff != "" {
		t.Errorf("ThreadID (-want +got):\n%s", diff)
	}

	if n := s.InFlight(); n != 0 {
		t.Errorf("InFlight with no open stream = %d", n)
	}
	b, cancel := openSlow(t, s)
	if n := s.InFlight(); n != 1 {
		t.Errorf("InFlight with a SLOW stream open = %d, want 1", n)
	}
	cancel()
	b.Close()
	deadline := time.Now().Add(2 * time.Second)
	for s.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the SLOW stream is still in flight 2s after its client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
