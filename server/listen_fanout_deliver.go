package server

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// The fan-out: a hint for a task followed by listens whose streams can be
// written without waiting (HTTP/1.1 streams taken over from net/http, see
// responseStream.tryNotifyTask) is delivered by a few goroutines per
// flight instead of by each listen's own goroutine. A thousand listens of
// one view then cost one lookup and a thousand writes, not also a
// thousand goroutine wake-ups, selects and flight joins.
//
// Every delivery keeps the listen's own semantics: the flight is its
// view's (its identity's own lookup, never another's), and the fan-out
// applies the same suppression, staleness, duplicate and terminal rules
// as project, under the listen's projection lock (subscription.pmu). It
// never waits: a listen that is projecting or renewing, whose stream is
// busy or backed up, whose own lookup is stuck or whose grant has ended
// gets the hint back in its queue and is woken, and goes on exactly as
// before; so a slow or stalled client delays nobody else.

// fanOutChunk is how many streams a goroutine of a fan-out takes at a
// time.
const fanOutChunk = 64

// fanOutHelpers is how many goroutines, node-wide, may help fan-outs
// write their streams at once: one per processor beyond the first (each
// fan-out's own goroutine writes too), at most seven.
func fanOutHelpers() int { return min(7, max(0, runtime.GOMAXPROCS(0)-1)) }

// fanOut delivers the hint for taskID to group, listens of one view whose
// streams take writes without waiting. It joins or starts the view's
// flight and, once the flight has returned, writes the streams
// (deliverAll). The goroutine that does so
// is owned by the flight: it starts when the flight's context ends (the
// lookup returned, its deadline passed, or the server closed) and ends
// when every stream of group is written or handed back; Server.Close
// waits for it (waitDetached). Once the registry is closed, the hint goes
// to the listens' queues instead.
func (r *registry) fanOut(taskID, view string, group []*subscription) {
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.fanouts.Add(1) // before close, so before waitDetached's Wait
	}
	r.mu.Unlock()
	var f *flight
	start := false
	if !closed {
		lead := group[0]
		if f, start = r.flightFor(taskID, view, lead.c.srv.opts.Subscriptions.AuthorizationTimeout); start {
			lead.c.ep.startFlight(lead, taskID, f)
		}
	}
	if f == nil { // closed: the listens are ending
		for _, s := range group {
			s.enqueue(taskID)
		}
		if !closed {
			r.fanouts.Done()
		}
		return
	}
	context.AfterFunc(f.ctx, func() {
		defer r.fanouts.Done()
		r.deliverAll(f, taskID, group)
	})
}

// deliverAll writes f's rendering to every listen of group, from this
// goroutine and as many helpers as writers allows, chunk by chunk. When
// the flight did not return in time (its deadline, or Server.Close), every
// listen is woken instead: each joins the flight and stops waiting for it
// as it would have without the fan-out.
func (r *registry) deliverAll(f *flight, taskID string, group []*subscription) {
	select {
	case <-f.done:
	default:
		for _, s := range group {
			s.enqueue(taskID)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		var ended []*subscription
		for {
			i := int(next.Add(fanOutChunk)) - fanOutChunk
			if i >= len(group) {
				break
			}
			for _, s := range group[i:min(i+fanOutChunk, len(group))] {
				if s.deliver(f, taskID) {
					ended = append(ended, s)
				}
			}
		}
		if len(ended) > 0 {
			r.mu.Lock()
			for _, s := range ended {
				r.unwatchLocked(s, taskID)
			}
			r.mu.Unlock()
		}
	}
	var wg sync.WaitGroup
helpers:
	for n := (len(group) - 1) / fanOutChunk; n > 0; n-- {
		select {
		case r.writers <- struct{}{}:
			wg.Go(func() {
				defer func() { <-r.writers }()
				work()
			})
		default:
			break helpers
		}
	}
	work()
	wg.Wait()
}

// deliver carries the hint for id to s and projects f, its flight, onto
// s's stream without waiting, as project would: it reports whether the
// task reached a terminal state for s, which must then stop following it.
// It works only under s's projection lock, and takes along a copy of the
// hint still queued for s (projecting f covers it); whenever the fan-out
// cannot finish the projection itself, the hint goes to s's queue and s's
// goroutine is woken to do it.
func (s *subscription) deliver(f *flight, id string) (terminal bool) {
	if !s.pmu.TryLock() {
		s.enqueue(id) // projecting or renewing: the listen takes the hint
		return false
	}
	defer s.pmu.Unlock()
	if !s.take(id) {
		return false // not accepted (any more)
	}
	if f.superseded.Load() {
		// A later hint forgot f: its own fan-out carries that hint and
		// the newer state. (The last unwatch forgets flights too, when
		// s follows the task no more.)
		return false
	}
	if f.failed {
		s.enqueue(id) // the lookup did not answer: the listen retries it
		return false
	}
	delete(s.retries, id) // the lookup answered
	if !f.ok {
		return false // suppressed for this view, as for the listens that join f
	}
	if s.inFlight != nil {
		select {
		case <-s.inFlight:
			s.inFlight = nil
		default:
			s.enqueue(id) // a lookup of s is stuck: s waits for it first
			return false
		}
	}
	if !s.c.srv.opts.now().Before(s.until) {
		s.enqueue(id) // the grant ended: the listen decides
		return false
	}
	if s.terminal[id] {
		return false
	}
	prev, seen := s.last[id]
	if seen && f.updated < prev.updated {
		return false // stale
	}
	if seen && prev.prefix == f.prefix && prev.suffix == f.suffix {
		return false // duplicate
	}
	switch s.c.stream.tryNotifyTask(f.prefix, s.rpcID, f.suffix) {
	case tryRefused:
		s.enqueue(id)
		return false
	case tryFinished:
		return false
	case tryPartial:
		s.poke() // the listen writes the rest under the write deadline
	}
	if f.terminal {
		s.terminal[id] = true
		delete(s.last, id)
		return true
	}
	s.last[id] = sentState{updated: f.updated, prefix: f.prefix, id: s.rpcID, suffix: f.suffix}
	return false
}
