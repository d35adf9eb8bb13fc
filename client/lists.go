package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
)

// paginate follows nextCursor for at most Options.MaxPages pages.
func paginate[T any](ctx context.Context, c *Client, method string, page func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for i := 0; i < c.opts.MaxPages; i++ {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
	return nil, protoErr(method, "more pages than Options.MaxPages", nil)
}

// legacyTool is a tool as a 2025-11-25 session lists it.
type legacyTool struct {
	mcp.Tool
	Execution *mcp.ToolExecution `json:"execution"`
}

// ListTools returns every tool of the server, following pagination. Tools
// whose x-mcp-header declarations break the rules of SEP-2243 are left out
// (and logged by name), as the protocol requires. The list is kept to
// derive the Mcp-Param-* headers of Call.
func (c *Client) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	entries, err := paginate(ctx, c, mcp.MethodToolsList, func(ctx context.Context, cursor string) ([]*toolEntry, string, error) {
		raw, err := c.request(ctx, mcp.MethodToolsList, &mcp.ListToolsParams{Cursor: cursor}, nil)
		if err != nil {
			return nil, "", err
		}
		var res struct {
			Tools      []*legacyTool `json:"tools"`
			NextCursor string        `json:"nextCursor"`
		}
		if err := decodeResult(mcp.MethodToolsList, raw, &res); err != nil {
			return nil, "", err
		}
		out := make([]*toolEntry, 0, len(res.Tools))
		for _, t := range res.Tools {
			if t == nil || t.Name == "" {
				continue
			}
			hs, err := mcp.ParseParamHeaders(t.InputSchema)
			if err != nil {
				c.opts.Logger.Warn("client: ignoring a tool with invalid x-mcp-header declarations", "tool", t.Name, "err", err)
				out = append(out, &toolEntry{tool: &t.Tool, invalid: err})
				continue
			}
			e := &toolEntry{tool: &t.Tool, headers: hs}
			if t.Execution != nil {
				e.taskSupport = t.Execution.TaskSupport
			}
			out = append(out, e)
		}
		return out, res.NextCursor, nil
	})
	if err != nil {
		return nil, err
	}
	cache := make(map[string]*toolEntry, len(entries))
	tools := make([]*mcp.Tool, 0, len(entries))
	for _, e := range entries {
		cache[e.tool.Name] = e
		if e.invalid == nil {
			tools = append(tools, e.tool)
		}
	}
	c.mu.Lock()
	c.tools = cache
	c.mu.Unlock()
	return tools, nil
}

// Tool returns the tool called name from the last ListTools, listing the
// tools first when none were listed yet. It returns (nil, nil) for a tool
// the server does not list (or that was left out as invalid).
func (c *Client) Tool(ctx context.Context, name string) (*mcp.Tool, error) {
	e, err := c.toolEntry(ctx, name)
	if e == nil || e.invalid != nil || err != nil {
		return nil, err
	}
	return e.tool, nil
}

func (c *Client) toolEntry(ctx context.Context, name string) (*toolEntry, error) {
	c.mu.Lock()
	listed := c.tools != nil
	e := c.tools[name]
	c.mu.Unlock()
	if listed {
		return e, nil
	}
	if _, err := c.ListTools(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools[name], nil
}

// ListPrompts returns every prompt of the server, following pagination.
func (c *Client) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	return paginate(ctx, c, mcp.MethodPromptsList, c.PromptsPage)
}

// PromptsPage returns one page of the server's prompts, the one cursor
// selects ("" for the first), and the next cursor ("" on the last page).
func (c *Client) PromptsPage(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
	var res mcp.ListPromptsResult
	err := c.requestInto(ctx, mcp.MethodPromptsList, &mcp.ListPromptsParams{Cursor: cursor}, nil, &res)
	return res.Prompts, res.NextCursor, err
}

// ListResources returns every resource of the server, following
// pagination.
func (c *Client) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	return paginate(ctx, c, mcp.MethodResourcesList, c.ResourcesPage)
}

// ResourcesPage returns one page of the server's resources and the next
// cursor, as PromptsPage does.
func (c *Client) ResourcesPage(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
	var res mcp.ListResourcesResult
	err := c.requestInto(ctx, mcp.MethodResourcesList, &mcp.ListResourcesParams{Cursor: cursor}, nil, &res)
	return res.Resources, res.NextCursor, err
}

// ListResourceTemplates returns every resource template of the server,
// following pagination.
func (c *Client) ListResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	return paginate(ctx, c, mcp.MethodResourcesTemplatesList, c.ResourceTemplatesPage)
}

// ResourceTemplatesPage returns one page of the server's resource
// templates and the next cursor, as PromptsPage does.
func (c *Client) ResourceTemplatesPage(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
	var res mcp.ListResourceTemplatesResult
	err := c.requestInto(ctx, mcp.MethodResourcesTemplatesList, &mcp.ListResourceTemplatesParams{Cursor: cursor}, nil, &res)
	return res.ResourceTemplates, res.NextCursor, err
}

// ReadResource reads the resource at uri, answering input_required rounds
// with the handlers.
func (c *Client) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	raw, err := c.withRounds(ctx, mcp.MethodResourcesRead, func(responses mcp.InputResponses, state string) (any, http.Header) {
		return &mcp.ReadResourceParams{URI: uri, InputResponses: responses, RequestState: state}, nameHeader(uri)
	})
	if err != nil {
		return nil, err
	}
	var res mcp.ReadResourceResult
	return &res, decodeResult(mcp.MethodResourcesRead, raw, &res)
}

// GetPrompt renders the prompt called name with args, answering
// input_required rounds with the handlers.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	raw, err := c.withRounds(ctx, mcp.MethodPromptsGet, func(responses mcp.InputResponses, state string) (any, http.Header) {
		return &mcp.GetPromptParams{Name: name, Arguments: args, InputResponses: responses, RequestState: state}, nameHeader(name)
	})
	if err != nil {
		return nil, err
	}
	var res mcp.GetPromptResult
	return &res, decodeResult(mcp.MethodPromptsGet, raw, &res)
}

// Complete asks for completions of the argument arg of ref (a prompt or a
// resource template); context holds arguments already filled in.
func (c *Client) Complete(ctx context.Context, ref *mcp.CompleteReference, arg mcp.CompleteArgument, context map[string]string) (*mcp.CompleteResult, error) {
	if ref == nil {
		return nil, errors.New("client: Complete needs a reference")
	}
	p := &mcp.CompleteParams{Ref: ref, Argument: arg}
	if context != nil {
		p.Context = &mcp.CompleteContext{Arguments: context}
	}
	var res mcp.CompleteResult
	return &res, c.requestInto(ctx, mcp.MethodCompletionComplete, p, nil, &res)
}

func (c *Client) requestInto(ctx context.Context, method string, params any, header http.Header, out any) error {
	raw, err := c.request(ctx, method, params, header)
	if err != nil {
		return err
	}
	return decodeResult(method, raw, out)
}

// peekResultType returns the resultType of a raw result ("complete" when
// absent).
func peekResultType(raw json.RawMessage) mcp.ResultType {
	var p struct {
		ResultType mcp.ResultType `json:"resultType"`
	}
	json.Unmarshal(raw, &p)
	if p.ResultType == "" {
		return mcp.ResultComplete
	}
	return p.ResultType
}

// withRounds sends a request that may answer input_required (2026-07-28),
// fulfilling each round with the handlers and retrying with the answers
// and the echoed requestState, at most Options.MaxInputRounds times.
// build returns the params (and headers) of one attempt.
func (c *Client) withRounds(ctx context.Context, method string, build func(mcp.InputResponses, string) (any, http.Header)) (json.RawMessage, error) {
	var responses mcp.InputResponses
	state := ""
	for round := 0; ; round++ {
		params, header := build(responses, state)
		raw, err := c.request(ctx, method, params, header)
		if err != nil {
			return nil, err
		}
		if peekResultType(raw) != mcp.ResultInputRequired || c.isLegacy() {
			return raw, nil
		}
		if round >= c.opts.MaxInputRounds {
			return nil, ErrTooManyRounds
		}
		var ir mcp.InputRequiredResult
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, protoErr(method, "malformed input_required result", err)
		}
		if len(ir.InputRequests) == 0 && ir.RequestState == "" {
			return nil, protoErr(method, "input_required result without input requests or request state", nil)
		}
		if responses, err = c.fulfil(ctx, "", ir.InputRequests); err != nil {
			return nil, err
		}
		state = ir.RequestState
	}
}
