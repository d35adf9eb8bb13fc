package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Extension is an MCP extension served by an endpoint: its identifier,
// the settings object declared for it under capabilities.extensions (in
// server/discover and in the initialize result of 2025 sessions), and the
// methods it adds, served in both eras and over stdio like the
// endpoint's own.
type Extension struct {
	// ID is the extension identifier, such as
	// "io.modelcontextprotocol/skills". Required.
	ID string
	// Settings are the extension's settings; nil declares {}.
	Settings mcp.Object
	// Methods are the methods the extension adds, by name. A method may not
	// be one the endpoint serves itself, nor one of another extension.
	Methods map[string]ExtensionHandler
}

// ExtensionHandler answers one request of an extension method. The result
// is encoded as JSON. In a 2026-07-28 call a result that is an
// mcp.MetaCarrier gets the server info in its _meta; a 2025 session
// receives it without resultType, ttlMs and cacheScope. An *mcp.Error (for
// example mcp.InvalidParams) is sent as that error; any other error as
// -32603 "Internal error". The handler runs in the bounded handler pool
// under the request deadline, after the Interceptor, like any handler.
type ExtensionHandler func(ctx context.Context, req *ExtensionRequest) (any, error)

// ExtensionRequest is an admitted request of an extension method.
type ExtensionRequest struct {
	// Request is the request as every handler sees it; Name is the params'
	// uri member, if any.
	*Request
	// Params are the raw params (nil when none), within the server's body
	// limits. The server has read _meta from them; the method decodes the
	// rest.
	Params json.RawMessage

	cursor *string
	ep     *Endpoint
}

// ErrInvalidCursor is returned by ExtensionRequest.Page for a cursor that
// the endpoint did not issue; a handler returns it as it is, which answers
// -32602.
var ErrInvalidCursor error = mcp.InvalidParams("Invalid params: invalid cursor")

// Page returns the bounds of the page the request's cursor member selects
// in a list of n items, and the cursor of the next page ("" on the last),
// with the endpoint's page size and cursor encoding, as the endpoint's own
// lists use them.
func (r *ExtensionRequest) Page(n int) (lo, hi int, next string, err error) {
	lo, hi, next, perr := r.ep.page(r.cursor, n)
	if perr != nil {
		return 0, 0, "", ErrInvalidCursor
	}
	return lo, hi, next, nil
}

// CacheTTL returns the endpoint's EndpointOptions.CacheTTL, the ttlMs its
// cacheable results carry.
func (r *ExtensionRequest) CacheTTL() time.Duration { return r.ep.opts.CacheTTL }

// CacheScope returns the cacheScope of the endpoint's cacheable results:
// public, or private when the server's catalog depends on the caller
// (Options.CatalogPolicy).
func (r *ExtensionRequest) CacheScope() mcp.CacheScope { return r.ep.cacheScope }

// AddExtension declares an extension on the endpoint and registers its
// methods. Problems (no ID, a duplicate ID or method, a method of the
// endpoint's own) are reported by New. It panics if ep already belongs to
// a server (see Endpoint).
func (ep *Endpoint) AddExtension(x Extension) {
	ep.mustBeOpen()
	switch {
	case x.ID == "" || strings.ContainsFunc(x.ID, func(r rune) bool { return r <= ' ' }):
		ep.fail(errors.New("extension: a non-empty id without blanks is required"))
		return
	case x.ID == mcp.ExtensionTasks:
		ep.fail(fmt.Errorf("extension %s is the server's own", x.ID))
		return
	}
	for _, have := range ep.extensions {
		if have.ID == x.ID {
			ep.fail(fmt.Errorf("extension %s is added twice", x.ID))
			return
		}
	}
	for name, h := range x.Methods {
		if h == nil || name == "" {
			ep.fail(fmt.Errorf("extension %s: method %q has no handler", x.ID, name))
			return
		}
	}
	ep.extensions = append(ep.extensions, x)
}

// checkExtensions reports extension methods that collide with the
// server's own methods or each other's.
func (ep *Endpoint) checkExtensions() error {
	var errs []error
	owner := map[string]string{}
	for _, x := range ep.extensions {
		for name := range x.Methods {
			if knownMethods[name] {
				errs = append(errs, fmt.Errorf("extension %s: method %s is the endpoint's own", x.ID, name))
			} else if o, dup := owner[name]; dup {
				errs = append(errs, fmt.Errorf("extension %s: method %s is also extension %s's", x.ID, name, o))
			}
			owner[name] = x.ID
		}
	}
	return errors.Join(errs...)
}

// addExtensionMethods adds the extensions' methods to a method table.
func (ep *Endpoint) addExtensionMethods(m map[string]methodFunc) {
	for _, x := range ep.extensions {
		for name, h := range x.Methods {
			m[name] = ep.extensionMethod(h)
		}
	}
}

// extensionCapabilities adds the extensions to an extensions capability
// (nil when there are none to add).
func (ep *Endpoint) extensionCapabilities(into map[string]mcp.Object) map[string]mcp.Object {
	if len(ep.extensions) == 0 {
		return into
	}
	if into == nil {
		into = map[string]mcp.Object{}
	}
	for _, x := range ep.extensions {
		s := x.Settings
		if s == nil {
			s = mcp.Object{}
		}
		into[x.ID] = s
	}
	return into
}

// extensionMethod runs h as a method of the pipeline.
func (ep *Endpoint) extensionMethod(h ExtensionHandler) methodFunc {
	return func(ctx context.Context, c *call) (any, Outcome, *protocolError) {
		if perr := c.chargeRequestLimiter(); perr != nil {
			return nil, OutcomeRateLimited, perr
		}
		rq, perr := c.newRequest(c.params.URI)
		if perr != nil {
			return nil, OutcomeProtocolError, perr
		}
		xr := &ExtensionRequest{Request: rq, Params: c.req.Params, cursor: c.params.Cursor, ep: ep}
		res, perr := c.runHandler(ctx, rq, func(ctx context.Context, _ *Request) (any, error) {
			return h(ctx, xr)
		})
		if perr != nil {
			return nil, outcomeOf(perr), perr
		}
		if res == nil {
			return nil, OutcomeInternalError, errInternal
		}
		return res, OutcomeComplete, nil
	}
}
