package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/taskwire/taskwire/mcp"
)

// MaxListenResourceURIs bounds notifications.resourceSubscriptions of one
// listen; each URI is at most 2,048 bytes.
const MaxListenResourceURIs = maxSubscriptionsPerSession

// resourceFilter validates and deduplicates the resourceSubscriptions of a
// listen's filter, in place.
func resourceFilter(f *mcp.SubscriptionFilter) *protocolError {
	if len(f.ResourceSubscriptions) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(f.ResourceSubscriptions))
	uris := f.ResourceSubscriptions[:0:0]
	for _, uri := range f.ResourceSubscriptions {
		if uri == "" || len(uri) > maxSubscriptionURI {
			return newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: an empty or too long URI in notifications.resourceSubscriptions"))
		}
		if !seen[uri] {
			seen[uri] = true
			uris = append(uris, uri)
		}
	}
	if len(uris) > MaxListenResourceURIs {
		return newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: too many URIs in notifications.resourceSubscriptions"))
	}
	f.ResourceSubscriptions = uris
	return nil
}

// subscribeResources subscribes the listen to the URIs it asked for, on an
// endpoint that serves resources, and returns those it follows, in the
// order asked: all of them, or those the endpoint's ResourceSubscriber
// accepted.
func (ep *Endpoint) subscribeResources(ctx context.Context, s *subscription, uris []string) []string {
	if len(uris) == 0 || !ep.servesResources() {
		return nil
	}
	sub := ep.resourceSubscriber()
	var acked []string
	for _, uri := range uris {
		if ctx.Err() != nil {
			break
		}
		if s.c.subscribeWith(ctx, sub, uri) != nil {
			continue // not acknowledged: the listen goes on without it
		}
		acked = append(acked, uri)
		if s.resources == nil {
			s.resources = map[string]ResourceSubscriber{}
		}
		s.resources[uri] = sub
	}
	return acked
}

// watchResources makes the updates of the URIs s follows on endpoint
// reach it.
func (r *registry) watchResources(s *subscription, endpoint string) {
	if len(s.resources) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byResource == nil {
		r.byResource = map[string]map[*subscription]struct{}{}
	}
	for uri := range s.resources {
		set := r.byResource[uri]
		if set == nil {
			set = map[*subscription]struct{}{}
			r.byResource[uri] = set
		}
		set[s] = struct{}{}
	}
	s.resEndpoint = endpoint
}

// unwatchResourcesLocked forgets the URIs s follows and tells the
// endpoint's ResourceSubscriber; r.mu is held.
func (r *registry) unwatchResourcesLocked(s *subscription) {
	for uri, sub := range s.resources {
		if set := r.byResource[uri]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(r.byResource, uri)
			}
		}
		if sub != nil {
			sub.UnsubscribeResource(uri)
		}
	}
	s.resources = nil
}

// resourceUpdated marks uri updated on every listen of endpoint ("":
// of any endpoint) that follows it, and wakes them. It never blocks on a
// client: updates of one URI coalesce until the listen writes them.
func (r *registry) resourceUpdated(endpoint, uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.byResource[uri] {
		if endpoint != "" && s.resEndpoint != endpoint {
			continue
		}
		s.lock()
		if s.pendingRes == nil {
			s.pendingRes = map[string]bool{}
		}
		s.pendingRes[uri] = true // bounded by the URIs s follows
		s.unlock()
		s.poke()
	}
}

// flushResources writes the resource updates pending for s, under s.pmu.
func (s *subscription) flushResources() drainResult {
	s.lock()
	pending := make([]string, 0, len(s.pendingRes))
	for uri := range s.pendingRes {
		pending = append(pending, uri)
	}
	clear(s.pendingRes)
	s.unlock()
	slices.Sort(pending)
	for _, uri := range pending {
		params, err := json.Marshal(&mcp.ResourceUpdatedParams{URI: uri, Meta: mcp.Meta{mcp.MetaSubscriptionID: json.RawMessage(s.rpcID)}})
		if err != nil || s.c.stream.notify(mcp.NotificationResourcesUpdated, params) != nil {
			return drainStreamFailed
		}
	}
	return drainDone
}
