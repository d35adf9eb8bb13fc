package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// upstreamCatalog is what the mirror and the pass-through of resources,
// prompts and completion need of the upstream connection; *client.Client
// satisfies it.
type upstreamCatalog interface {
	ListTools(ctx context.Context) ([]*mcp.Tool, error)
	ResourcesPage(ctx context.Context, cursor string) ([]*mcp.Resource, string, error)
	ResourceTemplatesPage(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error)
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	PromptsPage(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, ref *mcp.CompleteReference, arg mcp.CompleteArgument, context map[string]string) (*mcp.CompleteResult, error)
	ServerCapabilities() *mcp.ServerCapabilities
}

var _ upstreamCatalog = (*client.Client)(nil)

// Backoff of a refresh of the mirror whose tools/list failed.
const (
	refreshFirstBackoff = time.Second
	refreshMaxBackoff   = 30 * time.Second
)

// catalog keeps the mirror of the upstream's tools current on the
// endpoint it was registered on, and serves the upstream's resources,
// prompts and completion there. The upstream client's OnListChanged only
// wakes it (listChanged never blocks); its refresher goroutine, started by
// Register and ended by Close, does the work.
type catalog struct {
	wake chan struct{}                   // a refresh of the tools is due
	ep   atomic.Pointer[server.Endpoint] // the endpoint served, once registered

	g       *Gateway
	up      upstreamCatalog
	stop    context.CancelFunc
	done    chan struct{} // closed when the refresher has ended; nil when none runs
	mu      sync.Mutex    // guards stop and done
	served  map[string]*mcp.Tool
	asTasks map[string]bool // the task tools Register put in the durable set
}

func newCatalog() *catalog { return &catalog{wake: make(chan struct{}, 1)} }

// listChanged is the upstream client's OnListChanged: tools changes wake
// the refresher; prompts and resources changes are announced downstream
// at once, since those lists are read from the upstream on each request.
func (c *catalog) listChanged(k client.ListChange) {
	if k.Has(client.ToolsChanged) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	ep := c.ep.Load()
	if ep == nil {
		return
	}
	if k.Has(client.PromptsChanged) {
		ep.NotifyListChanged(server.ListPrompts)
	}
	if k.Has(client.ResourcesChanged) {
		ep.NotifyListChanged(server.ListResources)
	}
}

// register serves the upstream's resources, prompts and completion on ep
// (those the upstream advertises), remembers the tools Register added and
// starts the refresher. Only the first endpoint is kept current.
func (c *catalog) register(ep *server.Endpoint, tools []*mcp.Tool) {
	if !c.ep.CompareAndSwap(nil, ep) {
		c.g.log.Warn("gateway: Register on a second endpoint: only the first one follows the upstream's changes")
		return
	}
	if caps := c.up.ServerCapabilities(); caps != nil {
		if caps.Resources != nil {
			ep.SetResourceSource(c)
		}
		if caps.Prompts != nil {
			ep.SetPromptSource(c)
		}
		if caps.Completions != nil {
			ep.SetCompletionHandler(c.complete)
		}
	}
	c.served, c.asTasks = map[string]*mcp.Tool{}, map[string]bool{}
	for _, t := range tools {
		c.served[t.Name] = t
		c.asTasks[t.Name] = c.g.isTask(t.Name)
	}
	ctx, stop := context.WithCancel(context.Background())
	c.mu.Lock()
	c.stop, c.done = stop, make(chan struct{})
	done := c.done
	c.mu.Unlock()
	go c.refresher(ctx, ep, done) // ends with close
}

// close stops the refresher and waits for it.
func (c *catalog) close() {
	c.mu.Lock()
	stop, done := c.stop, c.done
	c.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// refresher refreshes the mirror on every wake once ep is served, retrying
// a failed refresh with backoff until one succeeds or a newer wake comes.
func (c *catalog) refresher(ctx context.Context, ep *server.Endpoint, done chan struct{}) {
	defer close(done)
	select {
	case <-ep.Served():
	case <-ctx.Done():
		return
	}
	backoff := refreshFirstBackoff
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-retry:
		}
		if err := c.refresh(ctx, ep); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.g.log.Warn("gateway: refreshing the mirror failed; retrying", "category", string(classify(ctx, err)), "in", backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, refreshMaxBackoff)
			continue
		}
		retry, backoff = nil, refreshFirstBackoff
	}
}

// refresh lists the upstream's tools and applies the difference to ep in
// one batch: new inline tools are added, changed ones replaced, tools the
// upstream no longer lists removed, and changed task tools redefined. A
// task tool that Register did not put in the durable set is left out
// until the gateway restarts (the set is fixed once the node is built),
// and so is a tool whose name the endpoint serves for someone else.
func (c *catalog) refresh(ctx context.Context, ep *server.Endpoint) error {
	lctx, cancel := context.WithTimeout(ctx, c.g.opts.ListTimeout)
	defer cancel()
	listed, err := c.up.ListTools(lctx)
	if err != nil {
		return err
	}
	if len(listed) > c.g.opts.MaxTools {
		return fmt.Errorf("the upstream lists %d tools, more than MaxTools (%d)", len(listed), c.g.opts.MaxTools)
	}
	taken := map[string]bool{}
	for _, t := range ep.Tools() {
		taken[t.Name] = c.served[t.Name] == nil
	}
	next := map[string]*mcp.Tool{}
	var changes []server.ToolChange
	for _, t := range c.g.mirror(listed) {
		name := t.Name
		old, isTask := c.served[name], c.g.isTask(name)
		switch {
		case taken[name] && old == nil:
			c.g.log.Warn("gateway: upstream tool left out: the endpoint serves a tool of that name", "tool", clip(name))
			continue
		case isTask && !c.asTasks[name]:
			c.g.log.Warn("gateway: new upstream task tool left out until the gateway restarts", "tool", clip(name))
			continue
		}
		next[name] = t
		switch {
		case old != nil && sameTool(old, t):
		case isTask:
			changes = append(changes, server.RedefineTool(t))
		default:
			changes = append(changes, server.PutRawTool(t, c.g.passThrough(name)))
		}
	}
	for name := range c.served {
		if next[name] == nil {
			changes = append(changes, server.RemoveTool(name))
		}
	}
	if err := ep.UpdateTools(changes...); err != nil {
		c.g.log.Error("gateway: the endpoint refused the refreshed mirror", "err", err.Error())
		return nil // the same list would be refused again: wait for the next change
	}
	c.served = next
	return nil
}

// sameTool reports whether two mirrored definitions are the same.
func sameTool(a, b *mcp.Tool) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

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
		items, next, err := c.up.ResourcesPage(ctx, cursor)
		return page[*mcp.Resource]{items, next}, err
	})
	return p.items, p.next, err
}

// ListResourceTemplates implements server.ResourceSource.
func (c *catalog) ListResourceTemplates(ctx context.Context, _ *server.Request, cursor string) ([]*mcp.ResourceTemplate, string, error) {
	p, err := forward(c, ctx, mcp.MethodResourcesTemplatesList, func(ctx context.Context) (page[*mcp.ResourceTemplate], error) {
		items, next, err := c.up.ResourceTemplatesPage(ctx, cursor)
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
		r, err := c.up.ReadResource(ctx, req.Name)
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
		items, next, err := c.up.PromptsPage(ctx, cursor)
		return page[*mcp.Prompt]{items, next}, err
	})
	return p.items, p.next, err
}

// GetPrompt implements server.PromptSource.
func (c *catalog) GetPrompt(ctx context.Context, req *server.Request, args map[string]string) (*mcp.GetPromptResult, error) {
	return forward(c, ctx, mcp.MethodPromptsGet, func(ctx context.Context) (*mcp.GetPromptResult, error) {
		return c.up.GetPrompt(ctx, req.Name, args)
	})
}

// complete is the endpoint's completion handler: completion/complete
// forwarded to the upstream.
func (c *catalog) complete(ctx context.Context, _ *server.Request, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return forward(c, ctx, mcp.MethodCompletionComplete, func(ctx context.Context) (*mcp.CompleteResult, error) {
		var args map[string]string
		if p.Context != nil {
			args = p.Context.Arguments
		}
		return c.up.Complete(ctx, p.Ref, p.Argument, args)
	})
}
