package mockacp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// mcpTimeout bounds each request to an MCP server.
const mcpTimeout = 30 * time.Second

// mcpClient is one stdio MCP server a session started: newline-delimited
// JSON-RPC on its stdin and stdout, requests one at a time.
type mcpClient struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	mu   sync.Mutex // one request at a time
	next int
}

// callTool calls tool on the session's server named server, starting the
// server on first use, and returns the text of its result.
func (a *agent) callTool(s *session, server, tool, args string) (string, error) {
	a.mu.Lock()
	c := s.servers[server]
	var spec *serverSpec
	for i := range s.specs {
		if s.specs[i].Name == server {
			spec = &s.specs[i]
		}
	}
	a.mu.Unlock()
	if c == nil {
		if spec == nil {
			return "", fmt.Errorf("no MCP server %q in this session", server)
		}
		var err error
		switch {
		case spec.Type == "http":
			c, err = startHTTPMCP(spec)
		case spec.Type != "" || spec.Command == "":
			return "", fmt.Errorf("MCP server %q is neither a stdio nor an http server", server)
		default:
			c, err = startMCP(spec)
		}
		if err != nil {
			return "", err
		}
		a.mu.Lock()
		if old := s.servers[server]; old != nil {
			a.mu.Unlock()
			c.stop()
			c = old
		} else {
			s.servers[server] = c
			a.mu.Unlock()
		}
	}
	var arguments json.RawMessage = []byte(orEmpty(args))
	res, err := c.call("tools/call", map[string]any{"name": tool, "arguments": arguments})
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", fmt.Errorf("tools/call result: %w", err)
	}
	var texts []string
	for _, b := range r.Content {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if r.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// mcpCaller is an MCP server of a session: stdio (mcpClient) or http
// (httpMCP).
type mcpCaller interface {
	call(method string, params any) (json.RawMessage, error)
	stop()
}

// startMCP starts a stdio server and initializes it.
func startMCP(spec *serverSpec) (*mcpClient, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env = os.Environ()
	for _, e := range spec.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting MCP server %s: %w", spec.Name, err)
	}
	c := &mcpClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
	if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mockacp", "version": "1.0.0"}}); err != nil {
		c.stop()
		return nil, fmt.Errorf("MCP server %s: initialize: %w", spec.Name, err)
	}
	if err := c.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *mcpClient) write(v any) error {
	b, _ := json.Marshal(v)
	_, err := c.in.Write(append(b, '\n'))
	return err
}

// call sends a request and reads until its answer, answering the server's
// own requests with -32601; it gives up after mcpTimeout (the server is
// then stopped).
func (c *mcpClient) call(method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id := c.next
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		for {
			line, err := c.out.ReadBytes('\n')
			if err != nil {
				done <- answer{err: fmt.Errorf("%s: the server's stdout ended: %w", method, err)}
				return
			}
			var m message
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			switch {
			case m.Method != "" && m.ID != nil:
				_ = c.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			case m.Method == "" && string(m.ID) == fmt.Sprint(id):
				if len(m.Error) > 0 {
					done <- answer{err: fmt.Errorf("%s: %s", method, m.Error)}
				} else {
					done <- answer{res: m.Result}
				}
				return
			}
		}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-time.After(mcpTimeout):
		c.stopLocked()
		return nil, fmt.Errorf("%s: no answer after %v", method, mcpTimeout)
	}
}

// stop ends the server: stdin closed, then a kill after a moment.
func (c *mcpClient) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked()
}

func (c *mcpClient) stopLocked() {
	c.in.Close()
	exited := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(time.Second):
		c.cmd.Process.Kill()
		<-exited
	}
}
