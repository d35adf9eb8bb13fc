package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// A flight is one lookup and rendering of a hinted task, shared by every
// subscription of the same view that follows the task: one manager lookup,
// one catalog policy and sanitizer call and one encoding per hint and view,
// however many listens wait for it.
//
// Freshness: the registry forgets a task's flights on every hint for it,
// before queuing the hint on the subscriptions, so a cached flight always
// started after the latest hint any of its joiners has seen. A joiner
// therefore gets a state at least as new as its own hint, exactly as if it
// had looked the task up itself. The fan-out (fanOut) joins or starts its
// flight after the hint forgot the older ones, and drops the delivery of a
// flight that a later hint forgot in turn (superseded): that hint's own
// fan-out delivers the newer state.
type flight struct {
	ctx    context.Context // the flight's deadline, also ended by Server.Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the lookup has returned; the fields below are then set
	// superseded is set when a hint for the task (or the last unwatch)
	// forgets the flight: a newer state may exist, so the fan-out no longer
	// delivers it (see subscription.deliver).
	superseded atomic.Bool

	ok bool // a snapshot to send (not suppressed, not failed)
	// failed is set when the lookup did not answer (no maintenance slot,
	// a manager error, the deadline): it says nothing about the task, so
	// each listen retries it (see subscription.retryLater).
	failed   bool
	updated  string // its lastUpdatedAt
	terminal bool
	// The notifications/tasks params around the subscription ID.
	prefix, suffix string
}

// viewOf is the key of everything a task lookup and its rendering depend
// on besides the task: the endpoint, the identity, the protocol version and
// the declared capabilities. Subscriptions of one view share flights.
//
// Each part is preceded by its length, so that no two views share a key
// whatever bytes an admission controller puts into an identity.
func viewOf(c *call) string {
	var b []byte
	part := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	part(c.ep.opts.Path)
	part(c.id.Principal)
	part(c.id.Tenant)
	part(c.id.RateKey)
	if m := c.params.Meta; m != nil {
		part(m.ProtocolVersion)
		caps, _ := json.Marshal(m.ClientCapabilities) // maps encode in key order
		part(string(caps))
	}
	return string(b)
}

// newPlaceholder returns the JSON string that stands for the subscription
// ID in a flight's rendering: random, so that no task content can contain
// it.
func newPlaceholder() string {
	return `"taskwire-subscription-` + rand.Text() + `"`
}

// flightFor returns the current flight of taskID for view and whether the
// caller must start it (a new one). It returns nil once the registry is
// closed.
func (r *registry) flightFor(taskID, view string, timeout time.Duration) (*flight, bool) {
	r.fmu.Lock()
	f := r.flights[taskID][view]
	r.fmu.Unlock()
	if f != nil {
		return f, false // the common case: join, without touching mu
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false
	}
	r.fmu.Lock()
	defer r.fmu.Unlock()
	byView := r.flights[taskID]
	if f := byView[view]; f != nil {
		return f, false
	}
	f = &flight{done: make(chan struct{})}
	f.ctx, f.cancel = context.WithTimeout(r.done, timeout)
	if r.byTask[taskID] != nil { // cache only what is followed; unwatch forgets it
		if byView == nil {
			byView = map[string]*flight{}
			r.flights[taskID] = byView
		}
		byView[view] = f
	}
	return f, true
}

// forget drops f from the cache if it is still the current flight, so that
// a failed lookup is not shared with later joiners.
func (r *registry) forget(taskID, view string, f *flight) {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	if byView := r.flights[taskID]; byView[view] == f {
		delete(byView, view)
		if len(byView) == 0 {
			delete(r.flights, taskID)
		}
	}
}

// startFlight runs f's lookup for s's view in its own goroutine, owned by
// the flight: it waits for a maintenance slot, then looks the task up and
// renders it under the flight's deadline (AuthorizationTimeout). A callback
// that ignores cancellation keeps the goroutine until it returns, but the
// maintenance slot is given back at the deadline. The leader's leaving
// does not cancel the flight: other listens may be waiting for it. Once
// Server.Close has begun, no goroutine starts and the flight fails at once.
func (ep *Endpoint) startFlight(s *subscription, id string, f *flight) {
	srv := s.c.srv
	c := s.c // every call of the view renders alike
	joined, started := srv.subs.callbacks.start("shared task lookup", nil)
	if !started { // Server.Close has begun: fail the flight as its deadline would
		f.failed = true
		srv.subs.forget(id, s.view, f)
		close(f.done)
		f.cancel()
		return
	}
	go func() { // owned by the flight; Server.Close waits for it (registry.callbacks)
		defer joined()
		defer f.cancel() // after done: joiners tell a deadline from an answer
		defer close(f.done)
		failed := true
		defer func() {
			if recover() != nil {
				f.ok = false
			}
			f.failed = failed
			if failed {
				srv.subs.forget(id, s.view, f)
			}
		}()
		select {
		case srv.maintenance <- struct{}{}:
		case <-f.ctx.Done():
			return
		}
		var once sync.Once
		release := func() { once.Do(func() { <-srv.maintenance }) }
		stop := context.AfterFunc(f.ctx, release)
		defer func() {
			stop()
			release()
		}()
		t, found, err := srv.opts.TaskManager.FindTask(f.ctx, c.requestContext(id))
		if err != nil {
			return
		}
		failed = false
		if !found || t.ID() != id {
			return // not found: suppressed for this view
		}
		d, perr := c.detail(f.ctx, t)
		if perr != nil {
			failed = f.ctx.Err() != nil // a deadline, not a verdict
			return
		}
		body, err := json.Marshal(&mcp.TaskNotificationParams{
			DetailedTask: d,
			Meta:         mcp.Meta{mcp.MetaSubscriptionID: json.RawMessage(srv.subs.placeholder)},
		})
		if err != nil {
			return
		}
		ph := []byte(srv.subs.placeholder)
		i := bytes.Index(body, ph)
		if i < 0 {
			return
		}
		f.prefix, f.suffix = string(body[:i]), string(body[i+len(ph):])
		f.updated, f.terminal = d.LastUpdatedAt, d.Status.Terminal()
		f.ok = f.ctx.Err() == nil
		failed = !f.ok
	}()
}

// sharedLookup returns the rendering of id for s: the current flight of
// its view, started after the latest hint for id, or a new one. s waits at
// most until the flight's deadline, its grant's end or its own end; a
// flight it stops waiting for keeps s's projection slot (s.inFlight) until
// its callbacks return, so no second lookup of s piles up behind a stuck
// one. ok means a snapshot to send; failed means the lookup did not
// answer (an error, a deadline, or s stopped waiting), as opposed to a
// snapshot suppressed for the view.
func (ep *Endpoint) sharedLookup(ctx context.Context, s *subscription, id string, grant SubscriptionGrant) (f *flight, ok, failed bool) {
	if s.inFlight != nil {
		select {
		case <-s.inFlight:
			s.inFlight = nil
		case <-ctx.Done():
			return nil, false, true
		}
	}
	srv := s.c.srv
	timeout := srv.opts.Subscriptions.AuthorizationTimeout
	f, start := srv.subs.flightFor(id, s.view, timeout)
	if f == nil {
		return nil, false, true // the registry is closed: the listen is ending
	}
	if start {
		ep.startFlight(s, id, f)
	}
	var expire <-chan time.Time
	if d := time.Until(grant.Until); d < timeout {
		t := time.NewTimer(d)
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-f.done:
		return f, f.ok, f.failed
	case <-f.ctx.Done():
	case <-ctx.Done():
	case <-expire:
	}
	select {
	case <-f.done:
		return f, f.ok, f.failed
	default:
		s.inFlight = f.done
		return nil, false, true
	}
}
