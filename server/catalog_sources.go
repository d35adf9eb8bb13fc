package server

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// ResourceSource serves resources beyond those registered with AddResource
// and AddResourceTemplate, asked at every resources/list,
// resources/templates/list and resources/read, so that what it serves may
// change while the endpoint is served (announce a change of its lists with
// Endpoint.NotifyListChanged and ListResources). The endpoint's own
// resources come first: lists page through them, then through the
// source's pages; a read goes to the source only for a URI that no
// registered resource or template matches. Each call runs as a handler
// does: within the request's deadline, through the Interceptor, in the
// handler pool. An error is mapped as a handler's is: an *mcp.Error is sent
// as is, any other error is the fixed internal error.
type ResourceSource interface {
	// ListResources returns one page of resources, the one cursor
	// selects ("" for the first), and the cursor of the next page ("" on
	// the last). The endpoint wraps cursors, so that any string is a
	// valid one (at most 2,048 bytes).
	ListResources(ctx context.Context, req *Request, cursor string) ([]*mcp.Resource, string, error)
	// ListResourceTemplates is ListResources for resource templates.
	ListResourceTemplates(ctx context.Context, req *Request, cursor string) ([]*mcp.ResourceTemplate, string, error)
	// ReadResource reads the resource req.Name names; ErrResourceNotFound
	// (or an error wrapping it) when it names nothing, which the client
	// sees exactly as an unknown resource of the endpoint's own.
	ReadResource(ctx context.Context, req *Request) (*mcp.ReadResourceResult, error)
}

// PromptSource serves prompts beyond those registered with AddPrompt, as
// ResourceSource does resources: lists page through the endpoint's own
// prompts first, and a prompts/get of a name that none of them has goes to
// the source.
type PromptSource interface {
	// ListPrompts returns one page of prompts and the next cursor, as
	// ResourceSource.ListResources does.
	ListPrompts(ctx context.Context, req *Request, cursor string) ([]*mcp.Prompt, string, error)
	// GetPrompt renders the prompt req.Name names with args, which it
	// checks itself; ErrPromptNotFound when there is none, which the
	// client sees exactly as an unknown prompt of the endpoint's own.
	GetPrompt(ctx context.Context, req *Request, args map[string]string) (*mcp.GetPromptResult, error)
}

// ErrPromptNotFound makes prompts/get answer as for an unknown prompt:
// -32602 "Invalid params: unknown prompt".
var ErrPromptNotFound = errors.New("server: prompt not found")

// SetResourceSource makes src serve resources on ep next to the registered
// ones (see ResourceSource); the endpoint then serves and advertises
// resources even with none registered. It panics if ep already belongs to a
// server (see Endpoint).
func (ep *Endpoint) SetResourceSource(src ResourceSource) {
	ep.mustBeOpen()
	ep.resourceSrc = src
}

// SetPromptSource makes src serve prompts on ep next to the registered
// ones (see PromptSource). It panics if ep already belongs to a server
// (see Endpoint).
func (ep *Endpoint) SetPromptSource(src PromptSource) {
	ep.mustBeOpen()
	ep.promptSrc = src
}

// servesResources reports whether the endpoint serves the resources
// methods.
func (ep *Endpoint) servesResources() bool {
	return len(ep.resources) > 0 || len(ep.templates) > 0 || ep.resourceSrc != nil
}

// servesPrompts reports whether the endpoint serves the prompts methods.
func (ep *Endpoint) servesPrompts() bool { return len(ep.prompts) > 0 || ep.promptSrc != nil }

// sourcePage is one page a source returned.
type sourcePage[T any] struct {
	items []T
	next  string
}

// sourcedPage returns the page a cursor selects in a list made of the
// endpoint's own entries, then of src's pages (src nil: the entries
// alone), and the next cursor.
func sourcedPage[E, T any](ctx context.Context, c *call, entries []E, wire func(E) T,
	src func(ctx context.Context, rq *Request, cursor string) ([]T, string, error)) ([]T, string, *protocolError) {
	cursor := c.params.Cursor
	srcCursor, fromSource := "", false
	if cursor != nil && src != nil {
		srcCursor, fromSource = decodeSourceCursor(*cursor)
	}
	if !fromSource && (src == nil || len(entries) > 0 || cursor != nil) {
		items, next, perr := pageOf(c.ep, cursor, entries, wire)
		if perr == nil && next == "" && src != nil {
			next = encodeSourceCursor("")
		}
		return items, next, perr
	}
	rq, perr := c.newRequest("")
	if perr != nil {
		return nil, "", perr
	}
	res, perr := c.runHandler(ctx, rq, func(ctx context.Context, rq *Request) (any, error) {
		items, next, err := src(ctx, rq, srcCursor)
		if err != nil {
			return nil, err
		}
		return sourcePage[T]{items: items, next: next}, nil
	})
	if perr != nil {
		return nil, "", perr
	}
	p, ok := res.(sourcePage[T])
	if !ok || len(p.next) > maxSourceCursor {
		return nil, "", errInternal
	}
	if p.next != "" {
		p.next = encodeSourceCursor(p.next)
	}
	if p.items == nil {
		p.items = []T{}
	}
	return p.items, p.next, nil
}

// maxSourceCursor bounds a source's cursor, so that the wrapped cursor a
// client sends back is bounded too.
const maxSourceCursor = 2048

const sourceCursorPrefix = "s1:"

func encodeSourceCursor(c string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(sourceCursorPrefix + c))
}

// decodeSourceCursor returns the source's cursor a wrapped cursor holds.
func decodeSourceCursor(c string) (string, bool) {
	if len(c) > base64.RawURLEncoding.EncodedLen(len(sourceCursorPrefix)+maxSourceCursor) {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), sourceCursorPrefix)
}
