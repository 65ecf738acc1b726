package mockacp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// httpOnly reports whether the agent takes only http MCP servers
// (MOCKACP_MCP=http-only): it advertises mcpCapabilities.http and refuses
// a session with a stdio server, as GitHub Copilot CLI does.
func httpOnly() bool { return os.Getenv("MOCKACP_MCP") == "http-only" }

// httpMCP is an http MCP server of a session (Streamable HTTP): each
// request is a POST of one JSON-RPC message with the server's headers,
// answered with application/json or an SSE stream that carries it.
type httpMCP struct {
	spec *serverSpec
	mu   sync.Mutex
	next int
}

// startHTTPMCP initializes an http server.
func startHTTPMCP(spec *serverSpec) (*httpMCP, error) {
	c := &httpMCP{spec: spec}
	if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mockacp", "version": "1.0.0"}}); err != nil {
		return nil, fmt.Errorf("MCP server %s: initialize: %w", spec.Name, err)
	}
	if err := c.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, nil); err != nil {
		return nil, fmt.Errorf("MCP server %s: initialized: %w", spec.Name, err)
	}
	return c, nil
}

func (c *httpMCP) call(method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	c.mu.Unlock()
	var m message
	if err := c.post(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if len(m.Error) > 0 {
		return nil, fmt.Errorf("%s: %s", method, m.Error)
	}
	return m.Result, nil
}

// post sends one message; a request's answer is decoded into into.
func (c *httpMCP) post(msg any, into *message) error {
	body, _ := json.Marshal(msg)
	req, err := http.NewRequest(http.MethodPost, c.spec.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range c.spec.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := (&http.Client{Timeout: mcpTimeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return fmt.Errorf("HTTP %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if into == nil {
		return nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<16), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && json.Unmarshal([]byte(strings.TrimSpace(data)), into) == nil && into.Method == "" {
				return nil
			}
		}
		return fmt.Errorf("the event stream ended without an answer")
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

func (c *httpMCP) stop() {}
