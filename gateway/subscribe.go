package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Resource subscriptions through the gateway. When the upstream advertises
// resources.subscribe, the endpoint's resource source is a
// subscribingCatalog: every downstream subscriber of a URI (a 2025-era
// session's resources/subscribe, a 2026-07-28 listen's
// resourceSubscriptions) reaches resourceSubs, which subscribes the URI at
// the upstream once for the whole process, counts the subscribers, and
// unsubscribes it upstream when the last one has gone. The upstream's
// notifications/resources/updated are delivered to the subscribers by
// Endpoint.NotifyResourceUpdated. When the upstream's session or process
// is new (a renewed 2025 session, a reopened 2026 listen, a restarted
// --upstream-cmd process), lost marks every URI unsubscribed, and the
// reconciler goroutine subscribes them again; their subscribers are told
// that they may have changed.

// Backoff of the reconciler after an upstream (un)subscribe failed.
const (
	resubscribeFirstBackoff = time.Second
	resubscribeMaxBackoff   = 30 * time.Second
)

// subscribingCatalog is the catalog as a server.ResourceSubscriber.
type subscribingCatalog struct {
	*catalog
	subs *resourceSubs
}

// SubscribeResource implements server.ResourceSubscriber.
func (s subscribingCatalog) SubscribeResource(ctx context.Context, _ *server.Request, uri string) error {
	return s.subs.subscribe(ctx, uri)
}

// UnsubscribeResource implements server.ResourceSubscriber.
func (s subscribingCatalog) UnsubscribeResource(uri string) { s.subs.unsubscribe(uri) }

// subEntry is one URI the gateway follows.
type subEntry struct {
	refs  int           // downstream subscribers
	ready chan struct{} // closed once the first upstream subscribe returned
	err   error         // its failure (the entry is gone then)
	live  bool          // subscribed on the upstream's current session
	busy  bool          // the reconciler is (un)subscribing it
}

// resourceSubs counts the downstream subscribers of each URI and keeps
// the upstream's subscriptions to match.
type resourceSubs struct {
	g    *Gateway
	wake chan struct{}
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	uris  map[string]*subEntry
	epoch uint64 // bumped by lost: the upstream's session or process is new
}

func newResourceSubs(g *Gateway) *resourceSubs {
	return &resourceSubs{g: g, wake: make(chan struct{}, 1), uris: map[string]*subEntry{}}
}

// start starts the reconciler; close ends it.
func (s *resourceSubs) start() {
	ctx, stop := context.WithCancel(context.Background())
	s.stop, s.done = stop, make(chan struct{})
	go s.reconciler(ctx) // ends with close
}

func (s *resourceSubs) close() {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
}

// errTooManySubscriptions is the answer beyond Options.MaxSubscriptions.
func (s *resourceSubs) errTooMany() error {
	return mcp.NewError(mcp.CodeInvalidParams, fmt.Sprintf(
		"Invalid params: the gateway follows as many upstream resources as it may (%d); unsubscribe from another first", s.g.opts.MaxSubscriptions))
}

// subscribe adds one downstream subscriber of uri; the first one
// subscribes at the upstream, within Options.CallTimeout and an in-flight
// slot, and its failure is every concurrent subscriber's.
func (s *resourceSubs) subscribe(ctx context.Context, uri string) error {
	for {
		s.mu.Lock()
		e := s.uris[uri]
		if e == nil {
			break // with s.mu held
		}
		s.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		s.mu.Lock()
		switch {
		case e.err != nil:
			s.mu.Unlock()
			return e.err
		case s.uris[uri] == e:
			e.refs++
			if !e.live {
				poke(s.wake)
			}
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock() // dropped meanwhile: start again
	}
	if len(s.uris) >= s.g.opts.MaxSubscriptions {
		s.mu.Unlock()
		return s.errTooMany()
	}
	e := &subEntry{ready: make(chan struct{})}
	s.uris[uri] = e
	epoch := s.epoch
	s.mu.Unlock()
	_, err := forward(s.g.cat, ctx, mcp.MethodResourcesSubscribe, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.g.upstream.subscribe(ctx, uri)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(e.ready)
	if err != nil {
		e.err = err
		delete(s.uris, uri)
		return err
	}
	e.refs++
	e.live = epoch == s.epoch
	if !e.live {
		poke(s.wake) // subscribed on a session that has gone since
	}
	return nil
}

// unsubscribe removes one downstream subscriber of uri; the reconciler
// unsubscribes at the upstream once none is left. It never blocks.
func (s *resourceSubs) unsubscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.uris[uri]; e != nil && e.refs > 0 {
		if e.refs--; e.refs == 0 {
			poke(s.wake)
		}
	}
}

// updated delivers an upstream's notifications/resources/updated to the
// downstream subscribers of uri ("": subscriptions may have been lost, see
// lost). It never blocks.
func (s *resourceSubs) updated(uri string) {
	if uri == "" {
		s.lost()
		return
	}
	s.mu.Lock()
	e := s.uris[uri]
	followed := e != nil && e.refs > 0
	s.mu.Unlock()
	if ep := s.g.cat.ep.Load(); followed && ep != nil {
		ep.NotifyResourceUpdated(uri)
	}
}

// lost marks every URI unsubscribed at the upstream (its session or
// process is new), has the reconciler subscribe them again, and tells
// their subscribers that they may have changed meanwhile.
func (s *resourceSubs) lost() {
	s.mu.Lock()
	s.epoch++
	var followed []string
	for uri, e := range s.uris {
		e.live = false
		if e.refs > 0 {
			followed = append(followed, uri)
		}
	}
	s.mu.Unlock()
	poke(s.wake)
	if ep := s.g.cat.ep.Load(); ep != nil {
		for _, uri := range followed {
			ep.NotifyResourceUpdated(uri)
		}
	}
}

// subWork is one upstream (un)subscribe of the reconciler.
type subWork struct {
	uri   string
	drop  bool // unsubscribe (no subscriber left) rather than subscribe again
	epoch uint64
}

// reconciler brings the upstream's subscriptions in line with the
// subscribers on every wake: it unsubscribes URIs nobody follows any more
// and subscribes again those the upstream lost, one at a time, retrying
// failures with backoff.
func (s *resourceSubs) reconciler(ctx context.Context) {
	defer close(s.done)
	backoff := resubscribeFirstBackoff
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-retry:
		}
		retry = nil
		failed := false
		for _, w := range s.pending() {
			if ctx.Err() != nil {
				return
			}
			if !s.apply(ctx, w) {
				failed = true
			}
		}
		if !failed {
			backoff = resubscribeFirstBackoff
			continue
		}
		retry = time.After(backoff)
		backoff = min(2*backoff, resubscribeMaxBackoff)
	}
}

// pending takes the URIs whose upstream subscription does not match their
// subscribers, marking them busy. A URI nobody follows that is not live
// is forgotten at once: the upstream's session has no subscription.
func (s *resourceSubs) pending() []subWork {
	s.mu.Lock()
	defer s.mu.Unlock()
	var work []subWork
	for uri, e := range s.uris {
		select {
		case <-e.ready:
		default:
			continue // its first subscribe is in flight
		}
		switch {
		case e.busy:
		case e.refs == 0 && !e.live:
			delete(s.uris, uri)
		case e.refs == 0:
			e.busy = true
			work = append(work, subWork{uri: uri, drop: true, epoch: s.epoch})
		case !e.live:
			e.busy = true
			work = append(work, subWork{uri: uri, epoch: s.epoch})
		}
	}
	return work
}

// apply runs one piece of work at the upstream and records its outcome;
// it reports false when it failed and should be retried.
func (s *resourceSubs) apply(ctx context.Context, w subWork) bool {
	method := mcp.MethodResourcesSubscribe
	if w.drop {
		method = mcp.MethodResourcesUnsubscribe
	}
	_, err := forward(s.g.cat, ctx, method, func(ctx context.Context) (struct{}, error) {
		if w.drop {
			return struct{}{}, s.g.upstream.unsubscribe(ctx, w.uri)
		}
		return struct{}{}, s.g.upstream.subscribe(ctx, w.uri)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.uris[w.uri]
	e.busy = false
	switch {
	case err != nil && !w.drop:
		return false // still not live: retried
	case w.drop:
		// Unsubscribed, or failed: a session that refuses it keeps
		// sending updates, which no one receives.
		if e.refs == 0 {
			delete(s.uris, w.uri)
			return true
		}
		e.live = false // a subscriber came back meanwhile
		poke(s.wake)
		return true
	}
	e.live = w.epoch == s.epoch
	if !e.live {
		poke(s.wake)
	}
	return true
}
