package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Backoff of a refresh of the mirror whose tools/list failed.
const (
	refreshFirstBackoff = time.Second
	refreshMaxBackoff   = 30 * time.Second
)

// errToolGone is the error of a call of a mirrored tool that the
// upstream's latest listing no longer offers.
var errToolGone = errors.New("gateway: the upstream no longer offers the tool")

// textToolGone is what a client reads for it.
const textToolGone = "The upstream server no longer offers this tool."

// lister lists the upstream's tools, following the cursors.
type lister func(context.Context) ([]*mcp.Tool, error)

// catalog keeps the mirror of the upstream's tools current, and serves the
// upstream's resources, prompts and completion on the endpoint Register
// was given (passthrough.go). Every refresh takes one path, refresh: the
// upstream's list changes (HTTP: client.Options.OnListChanged; stdio: the
// child's notifications) only wake the refresher goroutine, which New
// starts and Close ends; a restarted stdio process is refreshed by its
// supervisor before calls reach it. A refresh records what the upstream
// offers (a call of a tool it no longer offers answers errToolGone, on API
// nodes and workers alike) and, once the endpoint is served, applies the
// difference to it.
type catalog struct {
	g          *Gateway
	up         upstream
	wake       chan struct{} // a refresh of the tools is due
	registered chan struct{} // Register has set ep
	ep         atomic.Pointer[server.Endpoint]
	seq        atomic.Uint64 // numbers the listings, in the order they started

	stop context.CancelFunc
	done chan struct{} // closed when the refresher has ended; nil before start

	mu      sync.Mutex // serializes applying listings; guards the rest
	applied uint64     // the seq of the listing applied last
	latest  []*mcp.Tool
	served  map[string]*mcp.Tool // the mirrored tools on the endpoint; nil before register
	// set is the durable set Register was given (nil before), asTasks
	// the task tools in it: Register's and those added since
	// (catalog_tasks.go).
	set     *durable.Set
	asTasks map[string]bool
	refused map[string]bool // task tools the set refused to add, logged once
}

func newCatalog(g *Gateway) *catalog {
	return &catalog{g: g, wake: make(chan struct{}, 1), registered: make(chan struct{}, 1)}
}

// start records New's listing and starts the refresher.
func (c *catalog) start(up upstream, tools []*mcp.Tool) {
	ctx, stop := context.WithCancel(context.Background())
	c.mu.Lock()
	c.up, c.latest = up, tools
	c.stop, c.done = stop, make(chan struct{})
	done := c.done
	c.mu.Unlock()
	go c.refresher(ctx, done) // ends with close
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

// poke wakes the refresher without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// listChanged receives the upstream's list changes; it never blocks.
// Tools changes wake the refresher; prompts and resources changes are
// announced downstream at once, since those lists are read from the
// upstream on each request.
func (c *catalog) listChanged(k client.ListChange) {
	if k.Has(client.ToolsChanged) {
		poke(c.wake)
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

// restarted is the stdio supervisor's hook after the upstream's process
// restarted: list lists the new process's tools, before any call reaches
// it. A listing that fails keeps the previous one and leaves the retry to
// the refresher.
func (c *catalog) restarted(ctx context.Context, list lister) {
	c.mu.Lock()
	started := c.done != nil
	c.mu.Unlock()
	if !started {
		return // New has not listed yet: its listing is the new process's
	}
	if err := c.refresh(ctx, list); err != nil {
		c.g.log.Warn("gateway: listing the restarted upstream's tools failed; keeping the previous list", "category", string(classify(ctx, err)))
		poke(c.wake)
	}
	c.listChanged(client.PromptsChanged | client.ResourcesChanged)
}

// register remembers set and the task tools Register put in it, serves
// the upstream's resources, prompts and completion on ep (those the
// upstream advertised; ep may be nil on a worker), remembers the tools
// Register added and has the refresher follow the upstream's changes on
// ep once it is served. Only the first set and endpoint are kept current.
func (c *catalog) register(ep *server.Endpoint, set *durable.Set, tools []*mcp.Tool) {
	if !c.adopt(ep, set, tools) || ep == nil {
		return
	}
	if !c.ep.CompareAndSwap(nil, ep) {
		c.g.log.Warn("gateway: Register on a second endpoint: only the first one follows the upstream's changes")
		return
	}
	if caps := c.up.capabilities(); caps != nil {
		switch {
		case caps.Resources != nil && caps.Resources.Subscribe:
			ep.SetResourceSource(subscribingCatalog{c, c.g.subs}) // subscribe.go
		case caps.Resources != nil:
			ep.SetResourceSource(c)
		}
		if caps.Prompts != nil {
			ep.SetPromptSource(c)
		}
		if caps.Completions != nil {
			ep.SetCompletionHandler(c.complete)
		}
	}
	c.mu.Lock()
	c.served = map[string]*mcp.Tool{}
	for _, t := range tools {
		c.served[t.Name] = t
	}
	c.mu.Unlock()
	poke(c.registered)
}

// refresher refreshes the mirror on every wake, retrying a failed refresh
// with backoff until one succeeds or a newer wake comes; once the endpoint
// is served it brings it up to the latest listing.
func (c *catalog) refresher(ctx context.Context, done chan struct{}) {
	defer close(done)
	backoff := refreshFirstBackoff
	var retry <-chan time.Time
	var served <-chan struct{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.registered:
			served = c.ep.Load().Served()
			continue
		case <-served:
			served = nil
			c.mu.Lock()
			c.sync(c.latest) // what changed between New and serving
			c.mu.Unlock()
			continue
		case <-c.wake:
		case <-retry:
		}
		if err := c.refresh(ctx, c.up.listTools); err != nil {
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

// refresh lists the upstream's tools with list, within ctx and
// Options.ListTimeout, and applies the listing unless a newer one was
// applied while it ran.
func (c *catalog) refresh(ctx context.Context, list lister) error {
	seq := c.seq.Add(1)
	lctx, cancel := context.WithTimeout(ctx, c.g.opts.ListTimeout)
	defer cancel()
	listed, err := list(lctx)
	if err != nil {
		return err
	}
	if len(listed) > c.g.opts.MaxTools {
		return fmt.Errorf("the upstream lists %d tools, more than MaxTools (%d)", len(listed), c.g.opts.MaxTools)
	}
	now := c.g.mirror(listed)
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq < c.applied {
		return nil // listed before a listing applied already
	}
	c.applied = seq
	c.note(now)
	c.latest = now
	c.sync(now)
	return nil
}

// note records now as what the upstream offers, and logs what changed.
func (c *catalog) note(now []*mcp.Tool) {
	var before map[string]*mcp.Tool
	if p := c.g.offered.Load(); p != nil {
		before = *p
	}
	c.g.setOffered(now)
	if added, removed, changed := diffTools(before, now); len(added)+len(removed)+len(changed) > 0 {
		c.g.log.Info("gateway: the upstream's tools changed", "added", added, "removed", removed, "changed", changed)
	}
}

// sync applies the listing now: new task tools join the durable set
// (addTasks, on API nodes and workers alike), and once the endpoint is
// served the difference between now and the tools it serves is applied in
// one batch: new inline tools are added, changed ones replaced, tools the
// upstream no longer lists removed, and changed task tools redefined. A
// tool whose name the endpoint serves for someone else is left out, and
// so is one whose settings contradict each other or that the durable set
// refused. Called with c.mu held.
func (c *catalog) sync(now []*mcp.Tool) {
	ep := c.ep.Load()
	if ep != nil {
		select {
		case <-ep.Served():
		default:
			return // the refresher syncs once it is
		}
	}
	taken := map[string]bool{}
	if ep != nil {
		for _, t := range ep.Tools() {
			taken[t.Name] = c.served[t.Name] == nil
		}
	}
	added := c.addTasks(now, taken)
	if ep == nil || c.served == nil {
		return
	}
	next := map[string]*mcp.Tool{}
	var changes []server.ToolChange
	for _, t := range now {
		name := t.Name
		old := c.served[name]
		p, err := c.g.opts.planFor(name)
		switch {
		case taken[name] && old == nil:
			c.g.log.Warn("gateway: upstream tool left out: the endpoint serves a tool of that name", "tool", clip(name))
			continue
		case err != nil:
			c.g.log.Warn("gateway: upstream tool left out: its settings contradict each other", "tool", clip(name), "reason", err.Error())
			continue
		case p.task && !c.asTasks[name]:
			continue // the durable set refused it (logged)
		}
		next[name] = t
		switch {
		case old != nil && sameTool(old, t), added[name]:
		case p.task:
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
		// The same list would be refused again: wait for the next change.
		c.g.log.Error("gateway: the endpoint refused the refreshed mirror", "err", err.Error())
		return
	}
	c.served = next
}

// setOffered records the mirrored tools of a listing as what the upstream
// offers now.
func (g *Gateway) setOffered(tools []*mcp.Tool) {
	m := make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
		m[t.Name] = t
	}
	g.offered.Store(&m)
}

// isOffered reports whether the upstream's latest listing has name.
func (g *Gateway) isOffered(name string) bool {
	m := g.offered.Load()
	if m == nil {
		return true // not listed yet: New has not returned
	}
	_, ok := (*m)[name]
	return ok
}

// diffTools names the tools of now that before lacks (added), those of
// before that now lacks (removed) and those whose JSON differs (changed),
// each sorted and clipped for a log line.
func diffTools(before map[string]*mcp.Tool, now []*mcp.Tool) (added, removed, changed []string) {
	seen := map[string]bool{}
	for _, t := range now {
		seen[t.Name] = true
		old, ok := before[t.Name]
		switch {
		case !ok:
			added = append(added, clip(t.Name))
		case !sameTool(old, t):
			changed = append(changed, clip(t.Name))
		}
	}
	for name := range before {
		if !seen[name] {
			removed = append(removed, clip(name))
		}
	}
	slices.Sort(removed)
	return added, removed, changed
}

// sameTool reports whether two mirrored definitions are the same.
func sameTool(a, b *mcp.Tool) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
