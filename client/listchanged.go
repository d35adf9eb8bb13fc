package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// ListChange is a set of the server's lists that changed, or may have
// changed while the client could not hear of it (see
// Options.OnListChanged).
type ListChange uint8

// The lists a ListChange names.
const (
	ToolsChanged ListChange = 1 << iota
	PromptsChanged
	ResourcesChanged
)

// Has reports whether l names every list of k.
func (l ListChange) Has(k ListChange) bool { return l&k == k }

// listChangeOf is the list a list_changed notification names; 0 for any
// other method.
func listChangeOf(method string) ListChange {
	switch method {
	case mcp.NotificationToolsListChanged:
		return ToolsChanged
	case mcp.NotificationPromptsListChanged:
		return PromptsChanged
	case mcp.NotificationResourcesListChanged:
		return ResourcesChanged
	}
	return 0
}

// listNotifier hands list changes to Options.OnListChanged on one
// goroutine: the stream readers only set bits and wake it, so a slow
// callback never holds a reader, and changes that arrive meanwhile are
// coalesced into its next call.
type listNotifier struct {
	fn      func(ListChange)
	pending atomic.Uint32
	wake    chan struct{}
}

// note records changed lists without blocking; nil-safe.
func (n *listNotifier) note(k ListChange) {
	if n == nil || k == 0 {
		return
	}
	n.pending.Or(uint32(k))
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run calls fn until ctx ends (Close).
func (n *listNotifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		if k := ListChange(n.pending.Swap(0)); k != 0 && ctx.Err() == nil {
			n.fn(k)
		}
	}
}

// servedLists are the lists the server advertises, as a ListChange.
func (c *Client) servedLists() ListChange {
	caps := c.ServerCapabilities()
	var k ListChange
	if caps == nil {
		return 0
	}
	if caps.Tools != nil {
		k |= ToolsChanged
	}
	if caps.Prompts != nil {
		k |= PromptsChanged
	}
	if caps.Resources != nil {
		k |= ResourcesChanged
	}
	return k
}

// Bounds of the listen that follows list changes (2026-07-28).
const (
	listenFirstBackoff = time.Second
	listenMaxBackoff   = 30 * time.Second
)

// startListChanges starts following the server's list changes on a
// subscriptions/listen stream, once a 2026-07-28 server is known and
// Options.OnListChanged is set. The goroutine ends with Close.
func (c *Client) startListChanges(version string) {
	if c.lists == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.wg.Add(1)
	go c.followListChanges(c.closeCtx, version)
}

// followListChanges keeps a listen for list changes open, reopening it
// with backoff when it ends or cannot open, until ctx ends or the server
// shows it cannot announce them (it refuses listen with a JSON-RPC error,
// or acknowledges none of the lists).
func (c *Client) followListChanges(ctx context.Context, version string) {
	defer c.wg.Done()
	backoff := listenFirstBackoff
	for reopen := false; ctx.Err() == nil; reopen = true {
		started := time.Now()
		if final := c.listenLists(ctx, version, reopen); final {
			return
		}
		if time.Since(started) > listenMaxBackoff {
			backoff = listenFirstBackoff // the stream lived: start again quickly
		}
		if sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listenLists runs one listen for the lists the server advertises. A
// reopened listen reports every acknowledged list as changed, since
// changes may have been missed while none was open (the server may also
// have restarted). It reports final when there is nothing to follow.
func (c *Client) listenLists(ctx context.Context, version string, reopen bool) (final bool) {
	want := c.servedLists()
	if want == 0 {
		return true
	}
	filter := &mcp.SubscriptionFilter{ToolsListChanged: want.Has(ToolsChanged),
		PromptsListChanged: want.Has(PromptsChanged), ResourcesListChanged: want.Has(ResourcesChanged)}
	cl, err := c.modernCall(version, mcp.MethodSubscriptionsListen, &mcp.ListenParams{Notifications: filter}, nil)
	if err != nil {
		return true
	}
	lctx, cancel := c.requestContext(ctx, true)
	defer cancel()
	ackTimer := time.AfterFunc(c.opts.RequestTimeout, cancel) // the acknowledgement must come in time
	defer ackTimer.Stop()
	resp, _, err := c.post(lctx, cl)
	if err != nil {
		c.opts.Logger.Debug("client: listen for list changes failed", "err", err)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		_, err := c.readResponse(lctx, cl, resp)
		var rpc *RPCError
		c.opts.Logger.Debug("client: listen for list changes refused", "err", err)
		return errors.As(err, &rpc) && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests
	}
	return c.readListChanges(resp.Body, ackTimer, reopen)
}

// readListChanges reads a listen stream for list changes until it ends.
func (c *Client) readListChanges(body io.Reader, ackTimer *time.Timer, reopen bool) (final bool) {
	sr := newSSEReader(body, c.opts.MaxNotificationBytes, c.opts.MaxStreamEvents)
	var acked ListChange
	for {
		ev, err := sr.next()
		if err != nil {
			return false
		}
		var m wireMessage
		if len(ev.data) == 0 || json.Unmarshal(ev.data, &m) != nil {
			continue
		}
		switch k := listChangeOf(m.Method); {
		case m.Method == mcp.NotificationSubscriptionsAcknowledged:
			var p mcp.AcknowledgedParams
			if json.Unmarshal(m.Params, &p) != nil || p.Notifications == nil {
				return false
			}
			ackTimer.Stop()
			f := p.Notifications
			if f.ToolsListChanged {
				acked |= ToolsChanged
			}
			if f.PromptsListChanged {
				acked |= PromptsChanged
			}
			if f.ResourcesListChanged {
				acked |= ResourcesChanged
			}
			if acked == 0 {
				return true // the server announces none of them
			}
			if reopen {
				c.lists.note(acked)
			}
		case k != 0:
			c.lists.note(k & acked)
		case m.Method == "":
			return false // the server ended the listen
		}
	}
}
