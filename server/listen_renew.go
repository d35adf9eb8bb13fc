package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"
)

// renewalDelay is half the remaining grant plus a stagger of up to
// min(1 s, lease/20).
func renewalDelay(now, until time.Time) time.Duration {
	lease := until.Sub(now)
	if lease <= 0 {
		return 0
	}
	stagger := min(time.Second, lease/20)
	d := lease / 2
	if stagger > 0 {
		d += rand.N(stagger)
	}
	return d
}

// renew re-authorizes the listen and reconciles its accepted IDs, which can
// only shrink. It reports false when the listen must end. While the
// authorizer decides, the current grant holds and the fan-out goes on
// delivering; the reconciliation holds the projection lock.
func (ep *Endpoint) renew(ctx context.Context, s *subscription, grant SubscriptionGrant) (SubscriptionGrant, bool) {
	s.lock()
	current := make([]string, 0, len(s.accepted))
	for id := range s.accepted {
		current = append(current, id)
	}
	s.unlock()
	slices.Sort(current)
	g, err := ep.authorizeRenewal(ctx, s, current, grant)
	if err != nil {
		return grant, false
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.until = g.Until
	kept, _ := ep.reconcile(ctx, s, current, g, true)
	keep := setOfIDs(kept)
	s.accept(keep)
	s.forgetRetries(keep)
	for _, id := range current {
		if !keep[id] {
			s.c.srv.subs.unwatch(s, id)
		}
	}
	return g, true
}

var (
	errNoRenewalSlot = errors.New("no maintenance slot before the grant expired")
	errClosing       = errors.New("the server is closing")
)

// authorizeRenewal runs the renewal's authorization in a maintenance slot,
// so that a wave of renewals is bounded like projections. Waiting for the
// slot cannot outlast the current grant, and an authorizer that ignores
// cancellation keeps the slot no longer than AuthorizationTimeout: the
// renewal then fails and the listen ends.
func (ep *Endpoint) authorizeRenewal(ctx context.Context, s *subscription, ids []string, grant SubscriptionGrant) (SubscriptionGrant, error) {
	srv := s.c.srv
	wctx, cancel := context.WithDeadline(ctx, grant.Until)
	defer cancel()
	select {
	case srv.maintenance <- struct{}{}:
	case <-wctx.Done():
		return grant, errNoRenewalSlot
	}
	defer func() { <-srv.maintenance }()
	actx, cancelAuth := context.WithTimeout(ctx, srv.opts.Subscriptions.AuthorizationTimeout)
	defer cancelAuth()
	type result struct {
		g   SubscriptionGrant
		err error
	}
	done := make(chan result, 1)
	finished := make(chan struct{})
	joined, started := srv.subs.callbacks.start("subscription authorizer", nil)
	if !started { // Server.Close has begun: the listen is ending
		return grant, errClosing
	}
	go func() { // owned by the listen through s.authorizing; ends when the authorizer returns; Server.Close waits for it (registry.callbacks)
		defer joined()
		defer close(finished)
		defer func() {
			if recover() != nil {
				done <- result{err: errInternal}
			}
		}()
		g, err := ep.authorize(actx, s.c, ids, true)
		done <- result{g, err}
	}()
	select {
	case r := <-done:
		return r.g, r.err
	case <-actx.Done():
		// A failed renewal ends the listen, so no second one starts.
		s.authorizing = finished
		return grant, actx.Err()
	}
}
