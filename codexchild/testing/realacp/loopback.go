package realacp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// loopback is what the model mocks share: an HTTP server on loopback,
// closed at the end of the test, and the signal of a hanging request.
type loopback struct {
	srv  *httptest.Server
	hung chan struct{}
}

// startLoopback serves handler on loopback until the end of the test.
func startLoopback(t testing.TB, handler http.HandlerFunc) loopback {
	l := loopback{srv: httptest.NewServer(handler), hung: make(chan struct{}, 4)}
	t.Cleanup(l.srv.Close)
	return l
}

// URL returns the mock's base URL (ANTHROPIC_BASE_URL for [Anthropic];
// for [OpenAIChat] an OpenAI-compatible provider's is URL()+"/v1").
func (l loopback) URL() string { return l.srv.URL }

// Hung receives a value when a request for a prompt containing HANG
// arrived and stalls.
func (l loopback) Hung() <-chan struct{} { return l.hung }
