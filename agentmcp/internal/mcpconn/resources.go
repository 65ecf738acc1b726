package mcpconn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// MCP resources: a Handler that is a ResourceHandler has resources. The
// Conn then declares the resources capability (listChanged: the Handler
// calls Conn.ResourcesChanged, listchanged.go; not subscribe:
// resources/subscribe is not offered, and the modern revision refuses
// it), and serves resources/list,
// resources/templates/list and resources/read in both revisions, each on
// a goroutine of its own. Without one the lists are empty and
// resources/read is INVALID_PARAMS, as before.

// ResourceHandler is optional on a Handler: the server's resources. Each
// method runs on a goroutine of its own with a ctx that ends when the
// client cancels the request or the Conn is shutting down; an error is
// written as a JSON-RPC error (a URI the server does not have:
// proxyerr.ErrResourceNotFound, which goes as -32002 to legacy requests
// and as INVALID_PARAMS to modern ones).
type ResourceHandler interface {
	// ListResources returns the resources there are now (resources/list,
	// in one page).
	ListResources(ctx context.Context) ([]Resource, error)
	// ResourceTemplates returns the URI templates of the resources
	// (resources/templates/list).
	ResourceTemplates(ctx context.Context) ([]ResourceTemplate, error)
	// ReadResource returns a resource's contents (resources/read).
	ReadResource(ctx context.Context, uri string) ([]ResourceContents, error)
}

// Resource is an entry of resources/list.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	// LastModified goes in the annotations. optional: zero leaves it out.
	LastModified time.Time `json:"-"`
}

// ResourceTemplate is an entry of resources/templates/list: an RFC 6570
// URI template.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// ResourceContents is one item of a resources/read result (text only).
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text"`
}

// MarshalJSON writes the resource with its lastModified annotation.
func (r Resource) MarshalJSON() ([]byte, error) {
	type plain Resource
	v := struct {
		plain
		Annotations *resourceAnnotations `json:"annotations,omitempty"`
	}{plain: plain(r)}
	if !r.LastModified.IsZero() {
		v.Annotations = &resourceAnnotations{LastModified: r.LastModified.UTC().Format(time.RFC3339)}
	}
	return json.Marshal(v)
}

type resourceAnnotations struct {
	LastModified string `json:"lastModified"`
}

// resourceMethod reports the resource methods a ResourceHandler serves.
func resourceMethod(method string) bool {
	switch method {
	case "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// cacheHints are the caching hints the 2026-07-28 revision requires on
// resource results: sessions change at any time, so none is fresh (ttlMs
// 0), and what they show is this server's own.
var cacheHints = map[string]any{"ttlMs": 0, "cacheScope": "private"}

// resourceRequest serves a resource method through rh, on a goroutine of
// its own.
func (c *Conn) resourceRequest(m *jsonrpcframe.Message, params []jsonrpcframe.Member, meta reqMeta, rh ResourceHandler) {
	var uri string
	if m.Method == "resources/read" {
		var ok bool
		uri, ok = jsonrpcframe.String(jsonrpcframe.Lookup(params, "uri"))
		if !ok || uri == "" {
			c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "uri"}, "resources/read needs params.uri (a string)"), meta.modern)
			return
		}
	}
	ctx, e, err := c.track(m.ID)
	if err != nil {
		c.replyErrorFor(m.ID, err, meta.modern)
		return
	}
	c.log.Debug("resources", "method", m.Method, "uri", uri, "modern", meta.modern)
	go func() {
		defer c.untrack(m.ID, e)
		result := map[string]any{}
		var err error
		switch m.Method {
		case "resources/list":
			var list []Resource
			list, err = rh.ListResources(ctx)
			result["resources"] = nonNil(list)
		case "resources/templates/list":
			var list []ResourceTemplate
			list, err = rh.ResourceTemplates(ctx)
			result["resourceTemplates"] = nonNil(list)
		case "resources/read":
			var contents []ResourceContents
			contents, err = rh.ReadResource(ctx, uri)
			result["contents"] = nonNil(contents)
		}
		c.forget(m.ID, e)
		switch {
		case ctx.Err() != nil:
			c.log.Info("request cancelled by the client; no response sent", "id", m.ID.String(), "method", m.Method)
		case err != nil:
			c.replyErrorFor(m.ID, err, meta.modern)
		case meta.modern:
			for k, v := range cacheHints {
				result[k] = v
			}
			c.replyModern(m.ID, result)
		default:
			c.out.reply(m.ID, result)
		}
	}()
}

// nonNil makes a nil list an empty one (JSON [] rather than null).
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
