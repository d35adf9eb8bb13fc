package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// maxPendingUpdates bounds the resource updates waiting for
// Options.OnResourceUpdated; beyond it they collapse into one call with "".
const maxPendingUpdates = 256

// resourceNotifier hands resource updates to Options.OnResourceUpdated on
// one goroutine, as listNotifier does list changes: readers only record
// the URI and wake it.
type resourceNotifier struct {
	fn   func(uri string)
	wake chan struct{}

	mu      sync.Mutex
	pending map[string]bool
	all     bool // updates may have been missed: call fn("")
}

// note records an update of uri ("": every subscription may be lost or
// updated) without blocking; nil-safe.
func (n *resourceNotifier) note(uri string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	switch {
	case uri == "" || len(n.pending) >= maxPendingUpdates:
		n.all = true
	default:
		n.pending[uri] = true
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run calls fn until ctx ends (Close).
func (n *resourceNotifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		n.mu.Lock()
		all, pending := n.all, n.pending
		n.all, n.pending = false, map[string]bool{}
		n.mu.Unlock()
		if all && ctx.Err() == nil {
			n.fn("")
		}
		for uri := range pending {
			if ctx.Err() != nil {
				return
			}
			n.fn(uri)
		}
	}
}

// resourceUpdated records a notifications/resources/updated the server
// sent, outside a listen.
func (c *Client) resourceUpdated(params json.RawMessage) {
	var p mcp.ResourceUpdatedParams
	if c.updates != nil && json.Unmarshal(params, &p) == nil && p.URI != "" {
		c.updates.note(p.URI)
	}
}

// ErrNotAcknowledged is the error of SubscribeResource when a 2026-07-28
// server's listen acknowledged every other subscription but not this one.
var ErrNotAcknowledged = errors.New("client: the server did not acknowledge the resource subscription")

// SubscribeResource asks the server for notifications/resources/updated of
// uri, which reach Options.OnResourceUpdated. With a 2025-era server it
// sends resources/subscribe in the session (a renewed session has none:
// OnResourceUpdated is then told ""); with a 2026-07-28 server it adds uri
// to the resourceSubscriptions of the one subscriptions/listen the client
// keeps for them, opening a new listen with the new set (the previous one
// ends once the new one is acknowledged), and returns once a listen has
// acknowledged it: ErrNotAcknowledged when it did not. That listen is
// reopened with backoff (1 s to 30 s) when it ends, and OnResourceUpdated
// is told "" then. It fails as requests do otherwise.
func (c *Client) SubscribeResource(ctx context.Context, uri string) error {
	return c.resourceSubscription(ctx, uri, true)
}

// UnsubscribeResource undoes SubscribeResource: resources/unsubscribe in a
// 2025-era session; with a 2026-07-28 server, a listen without uri (none
// when no URI is left).
func (c *Client) UnsubscribeResource(ctx context.Context, uri string) error {
	return c.resourceSubscription(ctx, uri, false)
}

func (c *Client) resourceSubscription(ctx context.Context, uri string, on bool) error {
	e, v, err := c.ensure(ctx)
	if err != nil {
		return err
	}
	if e != eraModern {
		method := mcp.MethodResourcesUnsubscribe
		if on {
			method = mcp.MethodResourcesSubscribe
		}
		return c.requestInto(ctx, method, &mcp.SubscribeParams{URI: uri}, nil, &struct{}{})
	}
	gen := c.res.set(uri, on)
	if err := c.startResourceListen(v); err != nil {
		return err
	}
	if !on {
		return nil
	}
	if err := c.res.await(ctx, gen, uri); err != nil {
		c.res.set(uri, false)
		return err
	}
	return nil
}

// resourceListens is the state of the listen for resource updates that a
// 2026-07-28 client keeps: the URIs wanted, numbered by generation, and
// what the latest listen acknowledged.
type resourceListens struct {
	mu      sync.Mutex
	started bool
	want    map[string]bool
	gen     uint64 // bumped by every change of want
	done    uint64 // the latest generation a listen was opened for (or failed)
	acked   map[string]bool
	err     error         // the failure of generation done, nil when acknowledged
	settled chan struct{} // closed and replaced when done moves
	wake    chan struct{} // want changed
}

func newResourceListens() *resourceListens {
	return &resourceListens{want: map[string]bool{}, settled: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// set adds or removes uri and returns the generation that has it.
func (r *resourceListens) set(uri string, on bool) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.want[uri] != on {
		if on {
			r.want[uri] = true
		} else {
			delete(r.want, uri)
		}
		r.gen++
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return r.gen
}

// snapshot returns the URIs wanted and their generation.
func (r *resourceListens) snapshot() ([]string, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	uris := make([]string, 0, len(r.want))
	for uri := range r.want {
		uris = append(uris, uri)
	}
	return uris, r.gen
}

// settle records the outcome of the listen for generation gen.
func (r *resourceListens) settle(gen uint64, acked []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen < r.done {
		return
	}
	r.done, r.err, r.acked = gen, err, map[string]bool{}
	for _, uri := range acked {
		r.acked[uri] = true
	}
	close(r.settled)
	r.settled = make(chan struct{})
}

// await waits until a listen of generation gen or later has been opened,
// and reports whether it acknowledged uri.
func (r *resourceListens) await(ctx context.Context, gen uint64, uri string) error {
	for {
		r.mu.Lock()
		done, err, acked, settled := r.done, r.err, r.acked[uri], r.settled
		r.mu.Unlock()
		switch {
		case done >= gen && err != nil:
			return err
		case done >= gen && !acked:
			return ErrNotAcknowledged
		case done >= gen:
			return nil
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return &ConnectionError{Op: mcp.MethodSubscriptionsListen, Err: ctx.Err()}
		}
	}
}

// startResourceListen starts the goroutine that keeps the resource listen
// (once); it ends with Close.
func (c *Client) startResourceListen(version string) error {
	c.res.mu.Lock()
	started := c.res.started
	c.res.started = true
	c.res.mu.Unlock()
	if started {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.wg.Add(1)
	go c.followResources(c.closeCtx, version)
	return nil
}

// openListen is one open resource listen: its reader runs until stop or
// the stream's end, and closes ended.
type openListen struct {
	gen   uint64
	stop  context.CancelFunc
	ended chan struct{}
}

// followResources keeps one listen open for the URIs wanted: a change of
// them opens a new listen, and the previous one ends once the new one is
// acknowledged; a listen that ends is reopened with backoff.
func (c *Client) followResources(ctx context.Context, version string) {
	defer c.wg.Done()
	var cur *openListen
	defer func() {
		if cur != nil {
			cur.stop()
		}
	}()
	backoff, reopen := listenFirstBackoff, false
	var opened time.Time
	for ctx.Err() == nil {
		uris, gen := c.res.snapshot()
		if len(uris) == 0 {
			if cur != nil {
				cur.stop()
				cur = nil
			}
			reopen = false
			c.res.settle(gen, nil, nil)
			select {
			case <-ctx.Done():
			case <-c.res.wake:
			}
			continue
		}
		if cur != nil && cur.gen == gen {
			select {
			case <-ctx.Done():
			case <-c.res.wake:
			case <-cur.ended:
				cur.stop()
				cur, reopen = nil, true
				if time.Since(opened) > listenMaxBackoff {
					backoff = listenFirstBackoff // the stream lived: start again quickly
				}
				if sleep(ctx, backoff) != nil {
					return
				}
				backoff = min(2*backoff, listenMaxBackoff)
			}
			continue
		}
		next, acked, err := c.openResourceListen(ctx, version, gen, uris)
		if err != nil {
			c.res.settle(gen, nil, err)
			if sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, listenMaxBackoff)
			continue
		}
		if cur != nil {
			cur.stop()
		}
		cur, opened = next, time.Now()
		c.res.settle(gen, acked, nil)
		if reopen { // updates may have been missed meanwhile
			c.updates.note("")
			reopen = false
		}
	}
}

// openResourceListen opens a listen for uris and waits for its
// acknowledgement (within RequestTimeout), then reads it on a goroutine.
func (c *Client) openResourceListen(ctx context.Context, version string, gen uint64, uris []string) (*openListen, []string, error) {
	method := mcp.MethodSubscriptionsListen
	cl, err := c.modernCall(version, method, &mcp.ListenParams{Notifications: &mcp.SubscriptionFilter{ResourceSubscriptions: uris}}, nil)
	if err != nil {
		return nil, nil, err
	}
	lctx, cancel := c.requestContext(ctx, true)
	ackTimer := time.AfterFunc(c.opts.RequestTimeout, cancel)
	defer ackTimer.Stop()
	resp, _, err := c.post(lctx, cl)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		defer resp.Body.Close()
		defer cancel()
		if _, err := c.readResponse(lctx, cl, resp); err != nil {
			return nil, nil, err
		}
		return nil, nil, protoErr(method, "the listen ended before its acknowledgement", nil)
	}
	sr := newSSEReader(resp.Body, c.opts.MaxNotificationBytes, c.opts.MaxStreamEvents)
	var acked []string
	for acked == nil {
		m, err := nextMessage(sr)
		switch {
		case err != nil:
			resp.Body.Close()
			cancel()
			return nil, nil, &ConnectionError{Op: method, Err: err}
		case m.Method == mcp.NotificationSubscriptionsAcknowledged:
			var p mcp.AcknowledgedParams
			if json.Unmarshal(m.Params, &p) != nil || p.Notifications == nil {
				resp.Body.Close()
				cancel()
				return nil, nil, protoErr(method, "malformed acknowledgement", nil)
			}
			acked = append([]string{}, p.Notifications.ResourceSubscriptions...)
		}
	}
	ackTimer.Stop()
	ol := &openListen{gen: gen, stop: cancel, ended: make(chan struct{})}
	c.wg.Add(1)
	go func() { // ends with the stream: stop, Close or the server's end
		defer c.wg.Done()
		defer close(ol.ended)
		defer resp.Body.Close()
		c.readResourceUpdates(sr, acked)
	}()
	return ol, acked, nil
}

// nextMessage reads the next JSON-RPC message of an SSE stream, skipping
// events without one.
func nextMessage(sr *sseReader) (*wireMessage, error) {
	for {
		ev, err := sr.next()
		if err != nil {
			return nil, err
		}
		var m wireMessage
		if len(ev.data) > 0 && json.Unmarshal(ev.data, &m) == nil {
			return &m, nil
		}
	}
}

// readResourceUpdates reads a resource listen until it ends, passing the
// updates of acknowledged URIs on.
func (c *Client) readResourceUpdates(sr *sseReader, acked []string) {
	for {
		m, err := nextMessage(sr)
		if err != nil && !errors.Is(err, io.EOF) {
			c.opts.Logger.Debug("client: resource listen broke", "err", err)
		}
		if err != nil || m.Method == "" {
			return // broken, or the server ended the listen
		}
		if m.Method != mcp.NotificationResourcesUpdated {
			continue
		}
		var p mcp.ResourceUpdatedParams
		if json.Unmarshal(m.Params, &p) == nil {
			for _, uri := range acked {
				if uri == p.URI {
					c.updates.note(uri)
				}
			}
		}
	}
}
