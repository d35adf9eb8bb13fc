package mcpstdio

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/taskwire/taskwire/mcp"
)

// probe sends a 2026-07-28 server/discover and reports whether the server
// answered it as a 2026-07-28 server, keeping its result. Any other answer,
// or none within Options.ProbeTimeout, is no: the caller goes on with
// initialize.
func (c *Conn) probe(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	params := map[string]any{"_meta": map[string]any{
		mcp.MetaProtocolVersion:    mcp.LatestProtocolVersion,
		mcp.MetaClientCapabilities: map[string]any{},
		mcp.MetaClientInfo:         c.opts.ClientInfo,
	}}
	raw, err := c.Call(ctx, mcp.MethodServerDiscover, params, nil)
	if err != nil {
		return false
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(raw, &res) != nil || !slices.Contains(res.SupportedVersions, mcp.LatestProtocolVersion) {
		return false
	}
	c.discover = raw
	c.modern.Store(true)
	return true
}

// Modern reports whether the server answered Options.Modern's probe as a
// 2026-07-28 server: no session was initialized, and requests go through
// Forward.
func (c *Conn) Modern() bool { return c.modern.Load() }

// Discovered returns the server/discover result of a modern connection,
// nil otherwise.
func (c *Conn) Discovered() json.RawMessage {
	if !c.Modern() {
		return nil
	}
	return c.discover
}

// Forward sends a 2026-07-28 request whose params (a JSON object, or
// empty) already carry its _meta, and waits for its response, as Call
// does. The notifications that belong to it go to onNotify, from the
// reading goroutine (it must not block): notifications/progress for the
// progress token the params name (the token is replaced by one of this
// connection's on the way out, and given back in each notification), and
// every notification whose _meta names the request's ID as its
// io.modelcontextprotocol/subscriptionId (a subscriptions/listen), with
// that ID replaced by subscription. onNotify may be nil.
func (c *Conn) Forward(ctx context.Context, method string, params json.RawMessage, subscription json.RawMessage, onNotify func(method string, params json.RawMessage)) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	token, err := progressToken(params)
	if err != nil {
		return nil, fmt.Errorf("mcpstdio: %s: %w", method, err)
	}
	var onProgress func(json.RawMessage)
	if token != nil && onNotify != nil {
		onProgress = func(p json.RawMessage) {
			if out, err := setMember(p, "progressToken", token); err == nil {
				onNotify(mcp.NotificationProgress, out)
			}
		}
	}
	return c.call(ctx, method, params, onProgress, func(m string, p json.RawMessage) {
		if onNotify == nil {
			return
		}
		if out, err := setMeta(p, mcp.MetaSubscriptionID, subscription); err == nil {
			onNotify(m, out)
		}
	})
}

// progressToken returns the progressToken of params._meta, nil when there
// is none.
func progressToken(params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params must be a JSON object: %w", err)
	}
	return p.Meta["progressToken"], nil
}

// subscriptionOf returns the subscription ID a notification's _meta names,
// -1 when it names none this connection could have sent.
func subscriptionOf(params json.RawMessage) int64 {
	var p struct {
		Meta struct {
			ID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta.ID) == 0 {
		return -1
	}
	id, err := strconv.ParseInt(string(p.Meta.ID), 10, 64)
	if err != nil {
		return -1
	}
	return id
}

// setMember returns obj with its member name set to v.
func setMember(obj json.RawMessage, name string, v json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	m[name] = v
	return json.Marshal(m)
}

// setMeta returns params with _meta[key] set to v.
func setMeta(params json.RawMessage, key string, v json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	meta := json.RawMessage(`{}`)
	if raw, ok := m["_meta"]; ok {
		meta = raw
	}
	meta, err := setMember(meta, key, v)
	if err != nil {
		return nil, err
	}
	m["_meta"] = meta
	return json.Marshal(m)
}
