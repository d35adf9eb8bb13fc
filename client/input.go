package client

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/taskwire/taskwire/mcp"
)

// maxInputRequests bounds the input requests of one round.
const maxInputRequests = 64

// fulfil answers every input request with the handlers. A request no
// handler can answer fails with *InputRequiredError listing all keys.
func (c *Client) fulfil(ctx context.Context, taskID string, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	if len(reqs) > maxInputRequests {
		return nil, protoErr("input", fmt.Sprintf("more than %d input requests", maxInputRequests), nil)
	}
	for _, r := range reqs {
		if r == nil || !c.canAnswer(r.Method) {
			return nil, newInputRequiredError(taskID, reqs)
		}
	}
	out := make(mcp.InputResponses, len(reqs))
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		raw, err := c.fulfilOne(ctx, reqs[key])
		if err != nil {
			return nil, err
		}
		out[key] = raw
	}
	return out, nil
}

// fulfilOne runs the handler for one input request and encodes its answer.
func (c *Client) fulfilOne(ctx context.Context, r *mcp.InputRequest) (json.RawMessage, error) {
	h := &c.opts.Handlers
	var res any
	switch r.Method {
	case mcp.MethodElicitationCreate:
		var p mcp.ElicitParams
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return nil, protoErr(r.Method, "malformed params", err)
		}
		if p.Mode == mcp.ElicitModeURL && !h.ElicitURL {
			return nil, protoErr(r.Method, "URL elicitation was not declared", nil)
		}
		er, err := h.Elicit(ctx, &p)
		if err != nil {
			return nil, fmt.Errorf("client: elicitation handler: %w", err)
		}
		if er == nil {
			return nil, fmt.Errorf("client: elicitation handler returned no result")
		}
		if h.ApplyElicitationDefaults && er.Action == mcp.ElicitActionAccept && p.Mode != mcp.ElicitModeURL {
			er.Content = withDefaults(p.RequestedSchema, er.Content)
		}
		res = er
	case mcp.MethodSamplingCreateMessage:
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return nil, protoErr(r.Method, "malformed params", err)
		}
		sr, err := h.Sample(ctx, &p)
		if err != nil {
			return nil, fmt.Errorf("client: sampling handler: %w", err)
		}
		res = sr
	case mcp.MethodRootsList:
		roots, err := h.Roots(ctx)
		if err != nil {
			return nil, fmt.Errorf("client: roots handler: %w", err)
		}
		res = mcp.ListRootsResult{Roots: roots}
	default:
		return nil, protoErr(r.Method, "unknown input request method", nil)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("client: %s answer cannot be encoded: %w", r.Method, err)
	}
	return b, nil
}

// withDefaults returns content with every property of the form schema that
// content leaves out set to the property's default (SEP-1034).
func withDefaults(schema json.RawMessage, content map[string]any) map[string]any {
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return content
	}
	out := maps.Clone(content)
	if out == nil {
		out = map[string]any{}
	}
	for name, prop := range s.Properties {
		if _, set := out[name]; set || len(prop.Default) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(prop.Default, &v) == nil && v != nil {
			out[name] = v
		}
	}
	return out
}
