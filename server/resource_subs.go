package server

import (
	"context"
	"encoding/json"

	"github.com/taskwire/taskwire/mcp"
)

// ResourceSubscriber is implemented by a ResourceSource that follows
// resource subscriptions itself (a gateway that subscribes at the server
// it fronts, say). The endpoint then tells it of every subscriber that
// starts and stops following a URI: a 2025-era session's
// resources/subscribe and resources/unsubscribe, the end of that session
// on this node (DELETE, expiry, the idle sweep), and each URI of a
// 2026-07-28 subscriptions/listen's notifications.resourceSubscriptions,
// from the listen's start to its end. Without it, every subscription is
// accepted and node-local: Server.NotifyResourceUpdated and
// Endpoint.NotifyResourceUpdated deliver the updates.
type ResourceSubscriber interface {
	// SubscribeResource is called when one subscriber starts following
	// uri (at most 2,048 bytes), as a handler is: within the request's
	// deadline, through the Interceptor, in the handler pool. An error
	// refuses the subscription: a 2025 resources/subscribe answers it
	// (an *mcp.Error as is, any other error as the fixed internal
	// error); a listen acknowledges every other URI and omits that one.
	SubscribeResource(ctx context.Context, req *Request, uri string) error
	// UnsubscribeResource is called exactly once for each successful
	// SubscribeResource, when that subscriber stops following uri. It
	// must not block nor call back into the server: it may be called
	// with the server's locks held.
	UnsubscribeResource(uri string)
}

// resourceSubscriber is the endpoint's ResourceSubscriber, nil when its
// source does not follow subscriptions.
func (ep *Endpoint) resourceSubscriber() ResourceSubscriber {
	sub, _ := ep.resourceSrc.(ResourceSubscriber)
	return sub
}

// subscribeWith asks sub (nil: accept at once) to follow uri for the
// call's subscriber.
func (c *call) subscribeWith(ctx context.Context, sub ResourceSubscriber, uri string) *protocolError {
	if sub == nil {
		return nil
	}
	rq, perr := c.newRequest(uri)
	if perr != nil {
		return perr
	}
	_, perr = c.runHandler(ctx, rq, func(ctx context.Context, rq *Request) (any, error) {
		return nil, sub.SubscribeResource(ctx, rq, uri)
	})
	return perr
}

// NotifyResourceUpdated sends notifications/resources/updated for uri to
// the subscribers of uri on this endpoint and node: its 2025-era sessions
// that subscribed to it (on their GET streams) and its 2026-07-28 listens
// that acknowledged it in resourceSubscriptions. Delivery is best effort,
// as with Server.NotifyResourceUpdated. Before the endpoint is served it
// does nothing.
func (ep *Endpoint) NotifyResourceUpdated(uri string) {
	if s := ep.server.Load(); s != nil {
		s.notifyResourceUpdated(ep.opts.Name, uri)
	}
}

// notifyResourceUpdated delivers an update of uri to the sessions and
// listens of endpoint ("": of every endpoint).
func (s *Server) notifyResourceUpdated(endpoint, uri string) {
	if s.subs != nil {
		s.subs.resourceUpdated(endpoint, uri)
	}
	if s.legacy == nil {
		return
	}
	params, err := json.Marshal(&mcp.ResourceUpdatedParams{URI: uri})
	if err != nil {
		return
	}
	msg := mcp.AppendNotification(nil, mcp.NotificationResourcesUpdated, params)
	s.legacy.live.each(func(ls *nodeSession) {
		ls.mu.Lock()
		_, sub := ls.subs[uri]
		match := sub && (endpoint == "" || ls.endpoint == endpoint)
		ls.mu.Unlock()
		if match {
			ls.enqueue(msg)
		}
	})
}

// releaseSubsLocked tells the subscribers of ls's subscriptions that it
// follows none any more, and forgets them; ls.mu is held.
func (ls *nodeSession) releaseSubsLocked() {
	for uri, sub := range ls.subs {
		if sub != nil {
			sub.UnsubscribeResource(uri)
		}
	}
	clear(ls.subs)
}
