package mcpconn

import (
	"encoding/json"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Telling the client that the list of resources changed
// (notifications/resources/list_changed; the resources capability says
// listChanged). Up to 2025-11-25 the notification goes unsolicited to a
// client that has sent initialize. In 2026-07-28 it goes only on the
// streams the client opened with subscriptions/listen asking for
// resourcesListChanged: the server acknowledges a stream with
// notifications/subscriptions/acknowledged (the subset of what was asked
// that it will send: here only resource list changes), stamps every
// notification of the stream with the stream's id in
// _meta["io.modelcontextprotocol/subscriptionId"], and the stream ends
// when the client cancels the request (notifications/cancelled) or the
// Conn shuts down, without a response. Tools and prompts never change, so
// no stream carries their notifications; resources/subscribe is not
// offered (per-resource updates).

// metaSubscriptionID is the _meta key that ties a notification to its
// subscriptions/listen stream.
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// listen is an open subscriptions/listen stream.
type listen struct {
	id        jsonrpcframe.ID
	resources bool // it asked for resource list changes
}

// ResourcesChanged tells the client that the list of resources changed:
// a legacy client after initialize, and every subscriptions/listen stream
// that asked for it. It never waits for the client (the notifications go
// as events do: written, queued or dropped) and may be called from any
// goroutine. Without a ResourceHandler it does nothing.
func (c *Conn) ResourcesChanged() {
	if _, ok := c.cfg.Handler.(ResourceHandler); !ok || c.out == nil {
		return
	}
	c.mu.Lock()
	var streams []jsonrpcframe.ID
	for _, l := range c.listens {
		if l.resources {
			streams = append(streams, l.id)
		}
	}
	c.mu.Unlock()
	send := func(params any) {
		c.out.event(func() *jsonrpcframe.Message {
			m, _ := jsonrpcframe.NewNotification("notifications/resources/list_changed", params)
			return m
		}, false)
	}
	if c.ProtocolVersion() != "" {
		send(nil)
	}
	for _, id := range streams {
		send(map[string]any{"_meta": map[string]any{metaSubscriptionID: json.RawMessage(id.Raw())}})
	}
}

// listen opens a subscriptions/listen stream (a modern request): it is
// acknowledged at once and kept until the client cancels it or the Conn
// shuts down.
func (c *Conn) listen(m *jsonrpcframe.Message, params []jsonrpcframe.Member) {
	var filter struct {
		ResourcesListChanged bool `json:"resourcesListChanged"`
	}
	if raw := jsonrpcframe.Lookup(params, "notifications"); len(raw) > 0 {
		if err := json.Unmarshal(raw, &filter); err != nil {
			c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "notifications"},
				"subscriptions/listen: params.notifications is not a filter object: %v", err), true)
			return
		}
	}
	_, hasResources := c.cfg.Handler.(ResourceHandler)
	l := &listen{id: m.ID, resources: filter.ResourcesListChanged && hasResources}
	ctx, e, err := c.track(m.ID)
	if err != nil {
		c.replyErrorFor(m.ID, err, true)
		return
	}
	c.mu.Lock()
	if c.listens == nil {
		c.listens = map[jsonrpcframe.ID]*listen{}
	}
	c.listens[m.ID] = l
	c.mu.Unlock()
	agreed := map[string]any{}
	if l.resources {
		agreed["resourcesListChanged"] = true
	}
	c.log.Debug("subscriptions/listen opened", "id", m.ID.String(), "agreed", agreed)
	c.out.event(func() *jsonrpcframe.Message {
		n, _ := jsonrpcframe.NewNotification("notifications/subscriptions/acknowledged", map[string]any{
			"_meta": map[string]any{metaSubscriptionID: json.RawMessage(m.ID.Raw())}, "notifications": agreed})
		return n
	}, false)
	go func() {
		<-ctx.Done()
		c.mu.Lock()
		delete(c.listens, m.ID)
		c.mu.Unlock()
		c.log.Debug("subscriptions/listen closed", "id", m.ID.String())
		c.untrack(m.ID, e)
	}()
}
