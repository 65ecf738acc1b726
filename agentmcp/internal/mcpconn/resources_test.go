package mcpconn

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// resourceful is a Handler with resources: one text resource, one
// template, and reads that fail or wait on demand.
type resourceful struct {
	handlerFunc
	reads chan string // every uri read, in order
}

func (r resourceful) ListResources(context.Context) ([]Resource, error) {
	return []Resource{{URI: "atm://dev/a-1/summary", Name: "a-1/summary", Title: "arch: summary", MIMEType: "text/markdown",
		Description: "what arch did", LastModified: time.Date(2026, 11, 28, 1, 2, 3, 0, time.FixedZone("x", 3600))}}, nil
}

func (r resourceful) ResourceTemplates(context.Context) ([]ResourceTemplate, error) {
	return []ResourceTemplate{{URITemplate: "atm://dev/{agent_id}/summary", Name: "summary", MIMEType: "text/markdown"}}, nil
}

func (r resourceful) ReadResource(ctx context.Context, uri string) ([]ResourceContents, error) {
	r.reads <- uri
	switch uri {
	case "atm://dev/a-1/summary":
		return []ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: "# arch\\nall done"}}, nil
	case "atm://dev/slow/summary":
		<-ctx.Done() // until the client cancels
		return nil, ctx.Err()
	}
	return nil, proxyerr.New(proxyerr.ErrResourceNotFound, map[string]any{"uri": uri}, "no resource %s", uri)
}

// TestResources: with a ResourceHandler the Conn declares resources (in
// initialize and server/discover, with listChanged, without subscribe)
// and serves the three
// methods in both revisions, the modern results with caching hints, a
// missing resource as -32002 to legacy requests and as INVALID_PARAMS to
// modern ones; resources/subscribe stays refused on 2026-07-28.
func TestResources(t *testing.T) {
	h := resourceful{handlerFunc: echo, reads: make(chan string, 16)}
	c := start(t, Config{Handler: h, ServerInfo: ServerInfo{Name: "srv", Version: "1.0"}}, false)
	m26 := modernMeta("2026-07-28", `{}`)
	const info = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}`
	const listed = `[{"uri":"atm://dev/a-1/summary","name":"a-1/summary","title":"arch: summary","description":"what arch did","mimeType":"text/markdown","annotations":{"lastModified":"2026-11-28T00:02:03Z"}}]`
	const templates = `[{"uriTemplate":"atm://dev/{agent_id}/summary","name":"summary","mimeType":"text/markdown"}]`
	const contents = `[{"uri":"atm://dev/a-1/summary","mimeType":"text/markdown","text":"# arch\\nall done"}]`
	tests := []struct {
		name, method, params string
		want                 string
	}{
		{"initialize", "initialize", `{"protocolVersion":"2025-11-25"}`,
			`{"capabilities":{"logging":{},"resources":{"listChanged":true},"tools":{"listChanged":false}},"protocolVersion":"2025-11-25","serverInfo":{"name":"srv","version":"1.0"}}`},
		{"legacy list", "resources/list", `{}`, `{"resources":` + listed + `}`},
		{"legacy templates", "resources/templates/list", `{}`, `{"resourceTemplates":` + templates + `}`},
		{"legacy read", "resources/read", `{"uri":"atm://dev/a-1/summary"}`, `{"contents":` + contents + `}`},
		{"legacy not found", "resources/read", `{"uri":"atm://dev/nope/summary"}`, `-32002 no resource atm://dev/nope/summary`},
		{"legacy read without uri", "resources/read", `{}`, `-32602 resources/read needs params.uri (a string)`},
		{"discover", "server/discover", `{` + m26 + `}`,
			`{"cacheScope":"public","capabilities":{"logging":{},"resources":{"listChanged":true},"tools":{"listChanged":false}},"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"modern list", "resources/list", `{` + m26 + `}`, `{"cacheScope":"private","resources":` + listed + `,"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"modern templates", "resources/templates/list", `{` + m26 + `}`,
			`{"cacheScope":"private","resourceTemplates":` + templates + `,"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"modern read", "resources/read", `{"uri":"atm://dev/a-1/summary",` + m26 + `}`,
			`{"cacheScope":"private","contents":` + contents + `,"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"modern not found", "resources/read", `{"uri":"atm://dev/nope/summary",` + m26 + `}`, `-32602 no resource atm://dev/nope/summary`},
		{"modern subscribe", "resources/subscribe", `{"uri":"atm://dev/a-1/summary",` + m26 + `}`,
			`-32601 resources/subscribe is not part of MCP 2026-07-28 (stateless: no handshake, ping, log level or subscriptions)`},
		{"prompts stay empty", "prompts/list", `{}`, `{"prompts":[]}`},
	}
	for _, tt := range tests {
		if got := c.answer(tt.method, tt.params); got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
		}
	}
	close(h.reads)
	var reads []string
	for u := range h.reads {
		reads = append(reads, u)
	}
	if got := strings.Join(reads, " "); got != "atm://dev/a-1/summary atm://dev/nope/summary atm://dev/a-1/summary atm://dev/nope/summary" {
		t.Errorf("reads reaching the handler: %s", got)
	}
}

// TestResourceReadOffTheReader: a read runs off the reading goroutine (a
// slow one does not hold up the next request) and a cancelled one gets
// no answer.
func TestResourceReadOffTheReader(t *testing.T) {
	h := resourceful{handlerFunc: echo, reads: make(chan string, 16)}
	c := start(t, Config{Handler: h}, false)
	slow := c.send("resources/read", json.RawMessage(`{"uri":"atm://dev/slow/summary"}`))
	if u := <-h.reads; u != "atm://dev/slow/summary" {
		t.Fatalf("first read %s", u)
	}
	if m := c.call("ping", nil); m.Error != nil {
		t.Fatalf("ping behind a slow read: %s", m.Error)
	}
	n, _ := jsonrpcframe.NewNotification("notifications/cancelled", map[string]any{"requestId": slow})
	if err := c.w.Write(n); err != nil {
		t.Fatal(err)
	}
	m, before := c.response(c.send("ping", nil))
	if m.Error != nil || len(before) != 0 {
		t.Fatalf("ping after the cancel: %+v, after %d other messages", m, len(before))
	}
	select { // no answer to the cancelled read
	case m := <-c.msgs:
		t.Errorf("a message after the cancel: %+v", m)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestResourcesChanged: list changes reach a legacy client only after
// initialize, unsolicited, and a modern one only on the subscriptions/listen
// streams that asked for them, each acknowledged first and every
// notification stamped with the stream's id; a cancelled stream hears
// nothing more. A Conn without resources sends nothing.
func TestResourcesChanged(t *testing.T) {
	h := resourceful{handlerFunc: echo, reads: make(chan string, 16)}
	c := start(t, Config{Handler: h}, false)
	pending := func() []string {
		var out []string
		for {
			select {
			case m := <-c.msgs:
				b, _ := json.Marshal(m)
				out = append(out, string(b))
			case <-time.After(300 * time.Millisecond):
				return out
			}
		}
	}
	c.conn.ResourcesChanged() // no client has said who it is yet
	if got := pending(); len(got) != 0 {
		t.Errorf("before initialize: %v", got)
	}
	c.answer("initialize", `{"protocolVersion":"2025-11-25"}`)
	c.conn.ResourcesChanged()
	if diff := cmp.Diff([]string{`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`}, pending()); diff != "" {
		t.Errorf("legacy (-want +got):\n%s", diff)
	}

	m26 := modernMeta("2026-07-28", `{}`)
	all := c.send("subscriptions/listen", json.RawMessage(`{"notifications":{"resourcesListChanged":true,"toolsListChanged":true},`+m26+`}`))
	none := c.send("subscriptions/listen", json.RawMessage(`{"notifications":{"toolsListChanged":true},`+m26+`}`))
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + all.String() + `},"notifications":{"resourcesListChanged":true}}}`,
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + none.String() + `},"notifications":{}}}`,
	}
	if diff := cmp.Diff(want, pending()); diff != "" {
		t.Errorf("acknowledgements (-want +got):\n%s", diff)
	}
	c.conn.ResourcesChanged()
	want = []string{
		`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + all.String() + `}}}`,
	}
	if diff := cmp.Diff(want, pending()); diff != "" {
		t.Errorf("with two streams (-want +got):\n%s", diff)
	}
	n, _ := jsonrpcframe.NewNotification("notifications/cancelled", map[string]any{"requestId": all})
	if err := c.w.Write(n); err != nil {
		t.Fatal(err)
	}
	if m := c.call("ping", nil); m.Error != nil { // the cancel has been read
		t.Fatal(m.Error)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) { // the stream's goroutine lets go of it
		c.conn.mu.Lock()
		open := len(c.conn.listens)
		c.conn.mu.Unlock()
		if open == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still open after the cancel", open)
		}
	}
	c.conn.ResourcesChanged()
	if diff := cmp.Diff([]string{`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`}, pending()); diff != "" {
		t.Errorf("after the cancel (-want +got):\n%s", diff)
	}
	if got := c.answer("subscriptions/listen", `{}`); got != "-32601 method not found: subscriptions/listen" {
		t.Errorf("a legacy subscriptions/listen: %s", got)
	}

	plain := start(t, Config{}, false)
	plain.answer("initialize", `{"protocolVersion":"2025-11-25"}`)
	plain.conn.ResourcesChanged()
	select {
	case m := <-plain.msgs:
		t.Errorf("a Conn without resources sent %+v", m)
	case <-time.After(200 * time.Millisecond):
	}
}
