// Package mcptest drives an MCP server's real request pipeline without a
// network socket, for tests of servers built with this module.
//
// A Client builds requests exactly as a 2026-07-28 client sends them (the
// mirrored headers, the required _meta) and hands them to the server's
// http.Handler in process. Responses are parsed whether they come back as
// application/json or as an SSE stream, whose events are captured in order.
package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// Client sends requests to one endpoint of an http.Handler. Fields may be
// changed between calls; a Client is not safe for concurrent mutation.
type Client struct {
	// Handler is the server under test.
	Handler http.Handler
	// Path is the endpoint path, such as "/mcp".
	Path string
	// ProtocolVersion is sent in the header and _meta. Defaults to
	// mcp.LatestProtocolVersion.
	ProtocolVersion string
	// Capabilities are declared on every request. Nil sends {}.
	Capabilities *mcp.ClientCapabilities
	// Header is added to every request, for example Authorization.
	Header http.Header

	nextID int64
}

// NewClient returns a client for the endpoint at path of h.
func NewClient(h http.Handler, path string) *Client {
	return &Client{Handler: h, Path: path, ProtocolVersion: mcp.LatestProtocolVersion}
}

// Response is one HTTP exchange as the client saw it.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header is the response header.
	Header http.Header
	// Body is the raw response body.
	Body []byte
	// Messages are the JSON-RPC messages received: one for a JSON response,
	// every data event in order for an SSE stream.
	Messages []json.RawMessage
	// Result is the result member of the final response, if any.
	Result json.RawMessage
	// Error is the error member of the final response, if any.
	Error *mcp.Error
}

// Notifications returns the messages before the final response.
func (r *Response) Notifications() []json.RawMessage {
	if len(r.Messages) == 0 {
		return nil
	}
	return r.Messages[:len(r.Messages)-1]
}

// DecodeResult decodes the result into v.
func (r *Response) DecodeResult(v any) error {
	if r.Result == nil {
		return fmt.Errorf("mcptest: no result (status %d, error %v)", r.Status, r.Error)
	}
	return json.Unmarshal(r.Result, v)
}

// Call sends method with params, adding the required _meta (params must
// encode as a JSON object, or be nil) and the mirrored headers.
func (c *Client) Call(ctx context.Context, method string, params any) (*Response, error) {
	c.nextID++
	body, name, err := c.buildBody(c.nextID, method, params)
	if err != nil {
		return nil, err
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+c.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, c.version())
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, mcp.EncodeHeaderValue(name))
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	return c.Do(req)
}

// CallTool calls tools/call for the named tool.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*Response, error) {
	return c.Call(ctx, mcp.MethodToolsCall, map[string]any{"name": name, "arguments": args})
}

// Do sends a prepared request through the handler and parses the response.
func (c *Client) Do(req *http.Request) (*Response, error) {
	rec := httptest.NewRecorder()
	c.Handler.ServeHTTP(rec, req)
	return ParseResponse(rec.Result().StatusCode, rec.Header(), rec.Body.Bytes())
}

func (c *Client) version() string {
	if c.ProtocolVersion == "" {
		return mcp.LatestProtocolVersion
	}
	return c.ProtocolVersion
}

// buildBody encodes the request and returns the value Mcp-Name must carry.
func (c *Client) buildBody(id int64, method string, params any) ([]byte, string, error) {
	p := map[string]any{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, "", fmt.Errorf("mcptest: params: %w", err)
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, "", fmt.Errorf("mcptest: params must encode as an object: %w", err)
		}
	}
	caps := c.Capabilities
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	meta, _ := p["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaProtocolVersion] = c.version()
	meta[mcp.MetaClientCapabilities] = caps
	meta[mcp.MetaClientInfo] = mcp.Implementation{Name: "mcptest", Version: "1.0.0"}
	p["_meta"] = meta
	pname, _ := p["name"].(string)
	uri, _ := p["uri"].(string)
	taskID, _ := p["taskId"].(string)
	name, _ := mcp.TargetName(method, pname, uri, taskID)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	return body, name, err
}

// ParseResponse parses an HTTP response of an MCP endpoint.
func ParseResponse(status int, header http.Header, body []byte) (*Response, error) {
	r := &Response{Status: status, Header: header, Body: body}
	ct := header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				r.Messages = append(r.Messages, json.RawMessage(data))
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("mcptest: reading SSE: %w", err)
		}
	case strings.HasPrefix(ct, "application/json") && len(body) > 0:
		r.Messages = []json.RawMessage{body}
	default:
		return r, nil
	}
	if n := len(r.Messages); n > 0 {
		var final struct {
			Result json.RawMessage `json:"result"`
			Error  *mcp.Error      `json:"error"`
		}
		if err := json.Unmarshal(r.Messages[n-1], &final); err != nil {
			return nil, fmt.Errorf("mcptest: final message: %w", err)
		}
		r.Result, r.Error = final.Result, final.Error
	}
	return r, nil
}
