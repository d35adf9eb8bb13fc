package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// subscription is one subscriptions/listen stream. Its hint queue is a FIFO
// of distinct task IDs: a repeated hint for a queued ID keeps its place (the
// lookup will see the newest state), and a hint that arrives while its ID is
// being looked up queues it again behind the others, so no update that races
// a lookup is lost.
type subscription struct {
	c         *call
	tenant    string
	principal string // counted against MaxPerPrincipal; empty when anonymous
	source    string // Identity.Source, counted against MaxPerPrincipal too; empty when unset
	view      string // the key of the flights it shares (viewOf)
	rpcID     string // the listen request's JSON-RPC id, as sent
	// gone is closed when the client has left: the request's context
	// while net/http serves the stream, the stream's reader once it is
	// taken over (see detach).
	gone     <-chan struct{}
	detached bool // taken over from net/http (see detach)
	// direct is set once the stream can be written without waiting
	// (see responseStream.tryNotifyTask): hints for it are then delivered
	// by the fan-out (see registry.fanOut) instead of waking the listen's
	// goroutine, which only takes over what the fan-out hands back.
	direct atomic.Bool

	// Guarded by the registry's mutex.
	watching map[string]bool

	// lists are the list changes the listen accepted, fixed before it is
	// watched; pendingLists those changed and not written yet (see
	// flushLists); listEndpoint the endpoint they are watched on.
	lists        listBits
	pendingLists atomic.Uint32
	listEndpoint string

	// resources are the URIs the listen follows (notifications.
	// resourceSubscriptions), with the ResourceSubscriber told of each
	// (nil for none), fixed before it is watched; resEndpoint the
	// endpoint they are watched on. pendingRes, guarded by mu, are those
	// updated and not written yet (see flushResources).
	resources   map[string]ResourceSubscriber
	resEndpoint string
	pendingRes  map[string]bool

	mu       sync.Mutex
	queue    []string
	queued   map[string]bool
	accepted map[string]bool // nil while authorizing: keep every hint
	wake     chan struct{}

	// pmu guards the projection state below. The listen goroutine holds
	// it while it projects or renews (and may then wait: for a lookup, a
	// slow client, the authorizer); the fan-out only tries it, and hands
	// the hint back to the listen when it is held.
	pmu      sync.Mutex
	last     map[string]sentState
	terminal map[string]bool
	retries  map[string]lookupRetry // tasks whose last lookup failed (see retryLater)
	inFlight chan struct{}          // closed when the current lookup returns; nil when none
	until    time.Time              // the current grant's end
	// authorizing is closed when a renewal's authorizer that outlived
	// AuthorizationTimeout returns; nil when none is running. The listen
	// owns that goroutine: its request does not finish, nor give its
	// capacity back, before the goroutine has ended.
	authorizing chan struct{}
}

// sentState is the last snapshot a listen sent for a task: its
// lastUpdatedAt and its rendering (shared with the flight it came from).
type sentState struct {
	updated            string
	prefix, id, suffix string
}

// body is the notification params that were sent.
func (st sentState) body() string { return st.prefix + st.id + st.suffix }

func (s *subscription) lock()   { s.mu.Lock() }
func (s *subscription) unlock() { s.mu.Unlock() }

// enqueue records a hint without blocking and wakes the listen.
func (s *subscription) enqueue(id string) {
	s.record(id)
	s.poke()
}

// record queues a hint without waking the listen.
func (s *subscription) record(id string) {
	s.lock()
	if (s.accepted == nil || s.accepted[id]) && !s.queued[id] {
		s.queue = append(s.queue, id)
		s.queued[id] = true
	}
	s.unlock()
}

// poke wakes the listen's goroutine without blocking.
func (s *subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take is the fan-out's hint for id: it reports whether s accepts id,
// and removes a copy of the hint still queued, which the fan-out's
// projection covers. Before acceptance (authorizing), it queues the hint
// instead and wakes s, as enqueue would, and reports false.
func (s *subscription) take(id string) bool {
	s.lock()
	defer s.unlock()
	switch {
	case s.accepted == nil:
		if !s.queued[id] {
			s.queue = append(s.queue, id)
			s.queued[id] = true
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
		return false
	case !s.accepted[id]:
		return false
	case len(s.queue) > 0 && s.queued[id]: // most often the queue is empty
		delete(s.queued, id)
		if i := slices.Index(s.queue, id); i >= 0 {
			s.queue = slices.Delete(s.queue, i, i+1)
		}
	}
	return true
}

// next pops the oldest queued ID.
func (s *subscription) next() (string, bool) {
	s.lock()
	defer s.unlock()
	if len(s.queue) == 0 {
		return "", false
	}
	id := s.queue[0]
	s.queue = s.queue[1:]
	delete(s.queued, id)
	return id, true
}

// accept fixes the accepted set and drops queued hints for other IDs.
func (s *subscription) accept(ids map[string]bool) {
	s.lock()
	defer s.unlock()
	s.accepted = ids
	q := s.queue[:0]
	for _, id := range s.queue {
		if ids[id] {
			q = append(q, id)
		} else {
			delete(s.queued, id)
		}
	}
	s.queue = q
}

var errSubscriptionDenied = newProtocolError(http.StatusForbidden, mcp.NewError(mcp.CodeInvalidRequest, "Subscription not authorized"))

// listen serves subscriptions/listen: it reserves capacity, authorizes the
// listen while buffering hints, acknowledges the accepted filter, then
// projects task hints until the grant, the stream lifetime or the server
// ends it, and finally answers the listen request.
func (ep *Endpoint) listen(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	srv := c.srv
	opts := srv.opts.Subscriptions
	filter, perr := ep.listenFilter(c.params)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	requested := filter.TaskIDs
	if !ep.notifiesTasks() {
		requested = nil
	}
	if !srv.subs.reservePrincipal(c.id.Principal, c.id.Source) {
		return nil, OutcomeRateLimited, rateLimited(listenRetryAfter)
	}
	if !srv.subs.reserve(c.id.Tenant) {
		srv.subs.releasePrincipal(c.id.Principal, c.id.Source)
		return nil, OutcomeBusy, errSubscriptionsFull
	}
	s := &subscription{
		c: c, tenant: c.id.Tenant, principal: c.id.Principal, source: c.id.Source, view: viewOf(c), rpcID: string(c.req.ID.Raw()),
		watching: map[string]bool{},
		queued:   map[string]bool{}, wake: make(chan struct{}, 1),
		last: map[string]sentState{}, terminal: map[string]bool{},
		lists: ep.listFilter(filter),
	}
	owned := false // the stream's onFinish releases s
	defer func() {
		if !owned {
			srv.subs.release(s)
		}
	}()
	srv.subs.watch(s, requested) // hints during authorization are kept
	srv.subs.watchLists(s, ep.opts.Name)

	grant, err := ep.authorize(ctx, c, requested, false)
	if err != nil {
		return nil, OutcomeProtocolError, errSubscriptionDenied
	}
	s.until = grant.Until
	accepted, unreachable := ep.reconcile(ctx, s, requested, grant, false)
	if unreachable {
		return nil, OutcomeInternalError, errStoreUnavailable
	}
	s.accept(setOfIDs(accepted))
	for _, id := range requested {
		if !slices.Contains(accepted, id) {
			srv.subs.unwatch(s, id)
		}
	}
	c.stream.writeTimeout = opts.WriteTimeout
	c.stream.ownKeepAlive = true // the listen loop sends its own keep-alives
	ackFilter := acknowledged(accepted, s.lists)
	ackFilter.ResourceSubscriptions = ep.subscribeResources(ctx, s, filter.ResourceSubscriptions)
	srv.subs.watchResources(s, ep.opts.Name)
	ack, _ := json.Marshal(&mcp.AcknowledgedParams{
		Notifications: ackFilter,
		Meta:          mcp.Meta{mcp.MetaSubscriptionID: json.RawMessage(c.req.ID.Raw())},
	})
	owned = true // from here on, endListen gives the capacity back
	s.gone = c.r.Context().Done()
	if c.stream.notify(mcp.NotificationSubscriptionsAcknowledged, ack) != nil {
		return ep.endListen(s, false)
	}
	if dctx, ok := ep.detach(ctx, s); ok {
		go func() { // owned by the listen's stream; ends with the listen
			res, outcome, perr := ep.serveListen(dctx, s, grant)
			c.finish(c.respond(res, outcome, perr))
		}()
		return nil, OutcomeComplete, nil
	}
	return ep.serveListen(ctx, s, grant)
}

// detach takes an HTTP/1.1 listen stream over from net/http (see
// responseStream.hijack), so that the listen's handler can return and
// the idle stream holds neither its goroutine nor net/http's buffers. The
// listen then goes on under the returned context, which keeps ctx's
// deadline (MaxLifetime) and values but not its cancellation, and is
// canceled when the client leaves or the stream ends. It reports false
// when the stream cannot be taken over; the listen then goes on inside
// its handler.
func (ep *Endpoint) detach(ctx context.Context, s *subscription) (context.Context, bool) {
	if r := s.c.r; r.ProtoMajor != 1 || !r.ProtoAtLeast(1, 1) {
		return nil, false // only an HTTP/1.1 response is chunked
	}
	deadline, _ := ctx.Deadline()
	dctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	if !s.c.stream.hijack(cancel) { // the stream's reader calls cancel at its end
		cancel()
		return nil, false
	}
	s.gone = s.c.stream.gone
	s.detached = true
	if s.c.stream.raw != nil {
		s.direct.Store(true)
	}
	s.c.srv.subs.detach()
	s.c.detached = true
	s.c.r = nil // nothing reads the request any more: let it go
	return dctx, true
}

// serveListen projects hints until the listen ends, then answers it.
func (ep *Endpoint) serveListen(ctx context.Context, s *subscription, grant SubscriptionGrant) (any, Outcome, *protocolError) {
	pctx, stop := s.c.srv.subs.bind(ctx) // Server.Close ends every wait of the loop
	defer stop()
	return ep.endListen(s, ep.projectLoop(pctx, s, grant))
}

// endListen answers a listen that ended gracefully or not. After the final
// response (or abandoning the stream), the stream waits for a renewal's
// authorizer still running, then gives the capacity back.
func (ep *Endpoint) endListen(s *subscription, graceful bool) (any, Outcome, *protocolError) {
	c := s.c
	c.stream.onFinish = func() {
		if s.detached {
			c.srv.subs.undetach() // the connection is closed
		}
		if s.authorizing != nil {
			<-s.authorizing
		}
		c.srv.subs.release(s)
	}
	if !graceful {
		// The client left or stopped reading: nothing more can be sent.
		c.stream.abandon()
		return nil, OutcomeCanceled, errStreamGone
	}
	return &mcp.ListenResult{Meta: mcp.Meta{mcp.MetaSubscriptionID: json.RawMessage(c.req.ID.Raw())}}, OutcomeComplete, nil
}

// left reports whether the listen's client has gone away.
func (s *subscription) left() bool {
	select {
	case <-s.gone:
		return true
	default:
		return false
	}
}

// notifiesTasks reports whether listens on the endpoint can follow tasks.
func (ep *Endpoint) notifiesTasks() bool {
	return ep.tasks && ep.srv.subs != nil && ep.srv.opts.TaskManager.EventPublisher() != nil
}

func setOfIDs(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// authorize asks the authorizer under the authorization timeout.
func (ep *Endpoint) authorize(ctx context.Context, c *call, ids []string, renewal bool) (SubscriptionGrant, error) {
	opts := c.srv.opts.Subscriptions
	actx, cancel := context.WithTimeout(ctx, opts.AuthorizationTimeout)
	defer cancel()
	grant, err := opts.Authorizer.AuthorizeSubscription(actx, &SubscriptionRequest{
		Identity: c.id, Endpoint: ep.opts.Name, TaskIDs: slices.Clone(ids), Renewal: renewal,
	})
	if err == nil && actx.Err() != nil {
		err = actx.Err()
	}
	if err == nil && !grant.Until.After(c.srv.opts.now()) {
		err = errors.New("grant already expired")
	}
	return grant, err
}

// reconcile returns the IDs of ids the grant allows that the manager finds
// for this listen, and whose outstanding input (if any) the listener can
// answer. It never returns an ID outside ids. Its lookups render nothing:
// a completed result is not passed through the catalog policy or the
// sanitizer until a hint projects it.
//
// On the first acknowledgement a lookup that finds the store out of reach
// (see lookup) ends the reconciliation and reports unreachable, so that
// the listen is refused with 503 and Retry-After after one lookup's wait
// rather than acknowledged without the IDs after one wait per ID.
func (ep *Endpoint) reconcile(ctx context.Context, s *subscription, ids []string, grant SubscriptionGrant, renewal bool) (_ []string, unreachable bool) {
	var allowed map[string]bool
	if grant.TaskIDs != nil {
		allowed = setOfIDs(grant.TaskIDs)
	}
	var out []string
	for _, id := range ids {
		if allowed != nil && !allowed[id] {
			continue
		}
		ok, failed, unreachable := ep.lookup(ctx, s, id, grant)
		// A lookup that failed (a storage error or timeout) says nothing
		// about the task: a renewal keeps the ID, since every projection
		// authorizes again; the first acknowledgement leaves it out, or is
		// refused when the store is out of reach.
		if unreachable && !renewal {
			return nil, true
		}
		if ok || (failed && renewal) {
			out = append(out, id)
		}
	}
	return out, false
}

// lookup checks one task for the listen's acknowledgement or renewal: that
// the manager finds it for this listener and that the listener can answer
// its outstanding input, if any. It renders nothing (projections share
// their lookups, see sharedLookup). It runs inside a maintenance slot under
// AuthorizationTimeout, capped by the grant. A callback that ignores
// cancellation keeps the subscription's projection slot (s.inFlight) until
// it returns, but not the shared slot. failed means an error, not an
// answer: found or not is unknown. unreachable (with failed) means the
// store did not answer: the manager's call failed as storeUnavailable
// reads it, or was still running at the lookup's deadline.
func (ep *Endpoint) lookup(ctx context.Context, s *subscription, id string, grant SubscriptionGrant) (ok, failed, unreachable bool) {
	if s.inFlight != nil {
		select {
		case <-s.inFlight:
			s.inFlight = nil
		case <-ctx.Done():
			return false, true, false
		}
	}
	srv := s.c.srv
	deadline := srv.opts.now().Add(srv.opts.Subscriptions.AuthorizationTimeout)
	if grant.Until.Before(deadline) {
		deadline = grant.Until
	}
	lctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	select {
	case srv.maintenance <- struct{}{}:
	case <-lctx.Done():
		return false, true, false
	}
	type result struct{ ok, failed, unreachable bool }
	done := make(chan result, 1)
	finished := make(chan struct{})
	joined, started := srv.subs.callbacks.start("task lookup", nil)
	if !started { // Server.Close has begun: the listen is ending
		<-srv.maintenance
		return false, true, false
	}
	go func() { // owned by the subscription through s.inFlight; Server.Close waits for it (registry.callbacks)
		defer joined()
		defer close(finished)
		defer func() {
			if recover() != nil {
				done <- result{failed: true}
			}
		}()
		t, found, err := srv.opts.TaskManager.FindTask(lctx, s.c.requestContext(id))
		if err != nil {
			done <- result{failed: true, unreachable: storeUnavailable(err)}
			return
		}
		if !found || t.ID() != id {
			done <- result{}
			return
		}
		if t.Status() != task.InputRequired {
			done <- result{ok: true}
			return
		}
		_, perr := s.c.detail(lctx, t) // checks the input's capabilities; no policy or sanitizer
		done <- result{ok: perr == nil}
	}()
	var r result
	select {
	case r = <-done:
	case <-lctx.Done():
		s.inFlight = finished
		r.failed, r.unreachable = true, true
	}
	<-srv.maintenance
	if lctx.Err() != nil && !r.ok {
		return false, true, r.unreachable
	}
	return r.ok, r.failed, r.unreachable
}

// projectLoop delivers hinted task snapshots until the listen ends. It
// reports true for a graceful end (grant not renewed, lifetime reached,
// server closing) and false when the client left or its stream failed.
func (ep *Endpoint) projectLoop(ctx context.Context, s *subscription, grant SubscriptionGrant) bool {
	srv := s.c.srv
	keepAlive := time.NewTicker(srv.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	renew := time.NewTimer(renewalDelay(srv.opts.now(), grant.Until))
	defer renew.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var retryDue <-chan time.Time // nil while no retry is pending
	// drain projects the queue and arms the retry timer for what failed.
	drain := func() drainResult {
		r := ep.drain(ctx, s, grant)
		if r == drainLookupsFailed {
			srv.logger.Warn("subscriptions/listen: ending a listen whose task lookups kept failing", "attempts", lookupAttempts)
		}
		if r != drainDone {
			return r
		}
		s.pmu.Lock()
		d, pending := s.nextRetry(srv.opts.now())
		s.pmu.Unlock()
		retryDue = nil
		if pending {
			retry.Reset(d)
			retryDue = retry.C
		}
		return r
	}
	for {
		if s.left() {
			return false
		}
		select {
		case <-ctx.Done():
			return !s.left()
		case <-s.gone:
			return false
		case <-srv.subs.closing:
			return true
		case <-keepAlive.C:
			if s.c.stream.comment() != nil {
				return false
			}
		case <-renew.C:
			g, ok := ep.renew(ctx, s, grant)
			if !ok {
				return true
			}
			grant = g
			renew.Reset(renewalDelay(srv.opts.now(), grant.Until))
		case <-retryDue:
			s.pmu.Lock()
			s.queueDueRetries(srv.opts.now())
			s.pmu.Unlock()
			if r := drain(); r != drainDone {
				return r == drainLookupsFailed // graceful: the client reconnects and polls
			}
		case <-s.wake:
			if r := drain(); r != drainDone {
				return r == drainLookupsFailed
			}
		}
		if ctx.Err() != nil {
			return !s.left()
		}
	}
}

// drainResult is how a drain of the hint queue ended.
type drainResult int

const (
	drainDone          drainResult = iota // the queue is empty, or the listen is ending
	drainStreamFailed                     // the stream failed: nothing more can be sent
	drainLookupsFailed                    // a task's lookups kept failing: end the listen gracefully
)

// drain writes what the fan-out left pending and projects every queued
// hint.
func (ep *Endpoint) drain(ctx context.Context, s *subscription, grant SubscriptionGrant) drainResult {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.c.stream.flushPending() != nil {
		return drainStreamFailed
	}
	if r := s.flushLists(); r != drainDone {
		return r
	}
	if r := s.flushResources(); r != drainDone {
		return r
	}
	for ctx.Err() == nil {
		id, ok := s.next()
		if !ok {
			break
		}
		if r := ep.project(ctx, s, id, grant); r != drainDone {
			return r
		}
	}
	return drainDone
}

// project looks up one hinted task (through its view's shared flight) and
// writes its notification unless it is suppressed, stale or a duplicate.
// A lookup that failed is retried later (see retryLater); when it has
// failed too often, project reports drainLookupsFailed.
func (ep *Endpoint) project(ctx context.Context, s *subscription, id string, grant SubscriptionGrant) drainResult {
	if s.terminal[id] {
		return drainDone
	}
	f, ok, failed := ep.sharedLookup(ctx, s, id, grant)
	if failed {
		if ctx.Err() == nil && !s.retryLater(id, s.c.srv.opts.now()) {
			return drainLookupsFailed
		}
		return drainDone
	}
	delete(s.retries, id) // the lookup answered
	if !ok {
		return drainDone // suppressed for this view: the next hint or a poll sees it again
	}
	prev, seen := s.last[id]
	if seen && f.updated < prev.updated {
		return drainDone // stale
	}
	if seen && prev.prefix == f.prefix && prev.suffix == f.suffix {
		return drainDone // duplicate
	}
	if err := s.c.stream.notifyTask(f.prefix, s.rpcID, f.suffix); err != nil {
		return drainStreamFailed
	}
	s.last[id] = sentState{updated: f.updated, prefix: f.prefix, id: s.rpcID, suffix: f.suffix}
	if f.terminal {
		s.terminal[id] = true
		delete(s.last, id)
		s.c.srv.subs.unwatch(s, id)
	}
	return drainDone
}
