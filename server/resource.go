package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// ResourceHandler reads a resource. req.Name is the requested URI. Return
// ErrResourceNotFound (or wrap it) when the URI names nothing.
type ResourceHandler func(ctx context.Context, req *Request) (*mcp.ReadResourceResult, error)

// ErrResourceNotFound makes resources/read answer -32602 "Resource not found".
var ErrResourceNotFound = errors.New("server: resource not found")

type resourceEntry struct {
	resource *mcp.Resource
	handler  ResourceHandler
}

type templateEntry struct {
	template *mcp.ResourceTemplate
	pattern  *regexp.Regexp
	handler  ResourceHandler
}

// AddResource registers a resource with a fixed URI. It panics if ep
// already belongs to a server (see Endpoint).
func (ep *Endpoint) AddResource(r *mcp.Resource, h ResourceHandler) {
	ep.mustBeOpen()
	if r.URI == "" || r.Name == "" {
		ep.fail(errors.New("resource: uri and name are required"))
		return
	}
	if _, dup := ep.resourceIndex[r.URI]; dup {
		ep.fail(fmt.Errorf("resource %q is registered twice", r.URI))
		return
	}
	e := &resourceEntry{resource: r, handler: h}
	ep.resources = append(ep.resources, e)
	ep.resourceIndex[r.URI] = e
}

// AddResourceTemplate registers a family of resources described by an RFC
// 6570 level-1 URI template such as "file:///logs/{day}". Reads of URIs the
// template matches go to h; fixed resources win over templates. It panics
// if ep already belongs to a server (see Endpoint).
func (ep *Endpoint) AddResourceTemplate(t *mcp.ResourceTemplate, h ResourceHandler) {
	ep.mustBeOpen()
	re, err := compileURITemplate(t.URITemplate)
	if err != nil || t.Name == "" {
		ep.fail(fmt.Errorf("resource template %q: name and a valid uriTemplate are required", t.URITemplate))
		return
	}
	ep.templates = append(ep.templates, &templateEntry{template: t, pattern: re, handler: h})
}

// compileURITemplate turns {var} expressions into segment matchers.
func compileURITemplate(tmpl string) (*regexp.Regexp, error) {
	if tmpl == "" {
		return nil, errors.New("empty template")
	}
	var b strings.Builder
	b.WriteString("^")
	for rest := tmpl; rest != ""; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, errors.New("unclosed expression")
		}
		name := rest[i+1 : i+j]
		if name == "" || strings.ContainsAny(name, "{+#./;?&") {
			return nil, errors.New("unsupported expression")
		}
		b.WriteString("([^/]+)")
		rest = rest[i+j+1:]
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

func (ep *Endpoint) listResources(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	var src func(context.Context, *Request, string) ([]*mcp.Resource, string, error)
	if ep.resourceSrc != nil {
		src = ep.resourceSrc.ListResources
	}
	items, next, perr := sourcedPage(ctx, c, ep.resources, func(e *resourceEntry) *mcp.Resource { return e.resource }, src)
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	return &mcp.ListResourcesResult{
		Resources: items, NextCursor: next, TTLMs: ep.opts.CacheTTL.Milliseconds(), CacheScope: ep.cacheScope,
	}, OutcomeComplete, nil
}

func (ep *Endpoint) listResourceTemplates(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	var src func(context.Context, *Request, string) ([]*mcp.ResourceTemplate, string, error)
	if ep.resourceSrc != nil {
		src = ep.resourceSrc.ListResourceTemplates
	}
	items, next, perr := sourcedPage(ctx, c, ep.templates, func(e *templateEntry) *mcp.ResourceTemplate { return e.template }, src)
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	return &mcp.ListResourceTemplatesResult{
		ResourceTemplates: items, NextCursor: next, TTLMs: ep.opts.CacheTTL.Milliseconds(), CacheScope: ep.cacheScope,
	}, OutcomeComplete, nil
}

// resourceNotFound is the -32602 error for an unknown URI; its data names
// the URI the client asked for, as the resources specification requires.
func resourceNotFound(uri string) *protocolError {
	return newProtocolError(200, mcp.InvalidParams("Resource not found").WithData(map[string]string{"uri": uri}))
}

func (ep *Endpoint) readResource(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	uri := c.params.URI
	if uri == "" {
		return nil, OutcomeProtocolError, invalidParams("Invalid params: uri is required")
	}
	var h ResourceHandler
	if e, ok := ep.resourceIndex[uri]; ok {
		h = e.handler
	} else {
		for _, t := range ep.templates {
			if t.pattern.MatchString(uri) {
				h = t.handler
				break
			}
		}
	}
	if h == nil && ep.resourceSrc != nil {
		h = ep.resourceSrc.ReadResource
	}
	if h == nil {
		return nil, OutcomeProtocolError, resourceNotFound(uri)
	}
	if perr := c.chargeRequestLimiter(); perr != nil {
		return nil, OutcomeRateLimited, perr
	}
	rq, perr := c.newRequest(uri)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	res, perr := c.runHandler(ctx, rq, func(ctx context.Context, rq *Request) (any, error) {
		r, err := h(ctx, rq)
		if errors.Is(err, ErrResourceNotFound) {
			return nil, resourceNotFound(uri)
		}
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	switch r := res.(type) {
	case *mcp.InputRequiredResult:
		return r, OutcomeInputRequired, nil
	case *mcp.ReadResourceResult:
		if r == nil {
			return nil, OutcomeInternalError, errInternal
		}
		return r, OutcomeComplete, nil
	}
	return nil, OutcomeInternalError, errInternal
}
