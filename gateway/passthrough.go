package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// The catalog serves the upstream's resources, prompts and completion on
// the endpoint (server.ResourceSource, server.PromptSource and a
// completion handler), each request forwarded over the upstream's
// connection, HTTP or stdio alike.

// forward runs one upstream request within Options.CallTimeout and an
// in-flight slot, mapping its error as the tools' pass-through does.
func forward[T any](c *catalog, ctx context.Context, method string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	cctx, cancel := context.WithTimeout(ctx, c.g.opts.CallTimeout)
	defer cancel()
	release, err := c.g.acquire(cctx)
	if err != nil {
		return zero, c.failure(ctx, cctx, method, &client.ConnectionError{Op: method, Err: err})
	}
	defer release()
	v, err := fn(cctx)
	if err != nil {
		return zero, c.failure(ctx, cctx, method, err)
	}
	return v, nil
}

// failure maps an upstream failure: a JSON-RPC error as the tools'
// pass-through does (-32602 stays, others are -32603 naming the upstream's
// code), anything else a -32603 naming its category.
func (c *catalog) failure(ctx, cctx context.Context, method string, err error) error {
	if ctx.Err() != nil { // the downstream request ended first
		return context.Cause(ctx)
	}
	cat := classify(cctx, err)
	c.g.log.Warn("gateway: pass-through request failed", "method", method, "category", string(cat))
	var rpc *client.RPCError
	if errors.As(err, &rpc) {
		return upstreamError(rpc)
	}
	if cat == catTimeout {
		return mcp.NewError(mcp.CodeInternalError, fmt.Sprintf("The upstream server did not answer within %v.", c.g.opts.CallTimeout))
	}
	return mcp.NewError(mcp.CodeInternalError, fmt.Sprintf("The gateway could not complete the request: %s toward the upstream server.", cat))
}

type page[T any] struct {
	items []T
	next  string
}

// ListResources implements server.ResourceSource.
func (c *catalog) ListResources(ctx context.Context, _ *server.Request, cursor string) ([]*mcp.Resource, string, error) {
	p, err := forward(c, ctx, mcp.MethodResourcesList, func(ctx context.Context) (page[*mcp.Resource], error) {
		items, next, err := c.up.resourcesPage(ctx, cursor)
		return page[*mcp.Resource]{items, next}, err
	})
	return p.items, p.next, err
}

// ListResourceTemplates implements server.ResourceSource.
func (c *catalog) ListResourceTemplates(ctx context.Context, _ *server.Request, cursor string) ([]*mcp.ResourceTemplate, string, error) {
	p, err := forward(c, ctx, mcp.MethodResourcesTemplatesList, func(ctx context.Context) (page[*mcp.ResourceTemplate], error) {
		items, next, err := c.up.resourceTemplatesPage(ctx, cursor)
		return page[*mcp.ResourceTemplate]{items, next}, err
	})
	return p.items, p.next, err
}

// ReadResource implements server.ResourceSource. An upstream that does not
// know the URI (-32002 in the 2025 revisions, -32602 in 2026-07-28)
// answers as an unknown resource of the gateway's own.
func (c *catalog) ReadResource(ctx context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
	var unknown bool
	res, err := forward(c, ctx, mcp.MethodResourcesRead, func(ctx context.Context) (*mcp.ReadResourceResult, error) {
		r, err := c.up.readResource(ctx, req.Name)
		var rpc *client.RPCError
		if errors.As(err, &rpc) && (rpc.Code == mcp.CodeInvalidParams || rpc.Code == codeLegacyResourceNotFound) {
			unknown = true
		}
		return r, err
	})
	if unknown {
		return nil, server.ErrResourceNotFound
	}
	return res, err
}

// codeLegacyResourceNotFound is the resources/read error of an unknown URI
// in the 2025 revisions.
const codeLegacyResourceNotFound = -32002

// ListPrompts implements server.PromptSource.
func (c *catalog) ListPrompts(ctx context.Context, _ *server.Request, cursor string) ([]*mcp.Prompt, string, error) {
	p, err := forward(c, ctx, mcp.MethodPromptsList, func(ctx context.Context) (page[*mcp.Prompt], error) {
		items, next, err := c.up.promptsPage(ctx, cursor)
		return page[*mcp.Prompt]{items, next}, err
	})
	return p.items, p.next, err
}

// GetPrompt implements server.PromptSource.
func (c *catalog) GetPrompt(ctx context.Context, req *server.Request, args map[string]string) (*mcp.GetPromptResult, error) {
	return forward(c, ctx, mcp.MethodPromptsGet, func(ctx context.Context) (*mcp.GetPromptResult, error) {
		return c.up.getPrompt(ctx, req.Name, args)
	})
}

// complete is the endpoint's completion handler: completion/complete
// forwarded to the upstream.
func (c *catalog) complete(ctx context.Context, _ *server.Request, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	// Only the request's own members go upstream, not the client's _meta.
	q := &mcp.CompleteParams{Ref: p.Ref, Argument: p.Argument, Context: p.Context}
	return forward(c, ctx, mcp.MethodCompletionComplete, func(ctx context.Context) (*mcp.CompleteResult, error) {
		return c.up.complete(ctx, q)
	})
}
