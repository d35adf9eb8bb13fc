package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// claimsInFlight bounds the claims of one runtime that run at once, of
// all its queues. A job created while a claim is under way is not in that
// claim's snapshot; with a second claim started at once on its hint, it
// waits for one claim instead of the rest of the current one and then
// its own.
const claimsInFlight = 2

// claimPart is what one claim asked of one queue and got.
type claimPart struct {
	q     *queueState
	limit int // the slots the claim reserved for the queue
	jobs  []backend.JobRow
}

// claimed is the outcome of one claim of the claim loop: a Store.Claim of
// one queue, or a QueuesClaimer.ClaimQueues of several.
type claimed struct {
	parts []claimPart
	at    time.Time
	err   error
}

// claimLoop claims jobs while slots are free and starts one goroutine per
// job, until ctx is done. Up to claimsInFlight claims run at once,
// whatever the number of queues (the queues take turns), each asking for
// at most the free slots not reserved by the others, of the runtime and
// of each queue: while claims are under way, freed slots accumulate, so
// that the next claim takes them in one batch rather than one small claim
// per queue. A claim takes the jobs of one queue (Store.Claim) or, when
// the store is a backend.QueuesClaimer and several queues may have jobs
// to take, of all of them at once (ClaimQueues). A queue is claimed when
// it may have jobs to take (at start, after a claim that returned jobs of
// it, on a hint or a rescue for every queue, on a slot the queue's jobs
// freed, when the poll timer fires for every queue). It sleeps only on
// channels: a claim's result, a wake (hint, rescue or freed slot), or the
// poll timer, which a claim that returned nothing for a queue (or failed)
// starts unless it runs already. It returns once no claim is under way.
func (rt *Runtime) claimLoop(ctx, base context.Context, jobs *sync.WaitGroup) {
	poll := time.NewTimer(rt.opts.PollInterval)
	poll.Stop()
	defer poll.Stop()
	polling := false // the poll timer is running
	results := make(chan claimed, claimsInFlight*len(rt.queues))
	l := claimLoopState{multi: rt.queuesClaimer()}
	for ctx.Err() == nil {
		if rt.startClaims(ctx, &l, results) {
			continue
		}
		select {
		case <-ctx.Done():
		case r := <-results:
			l.inFlight--
			empty := r.err != nil
			for _, p := range r.parts {
				l.reserved -= p.limit
				p.q.reserved -= p.limit
				rt.start(ctx, base, jobs, p, r.at)
				if r.err == nil && len(p.jobs) > 0 {
					p.q.want = true
				} else {
					empty = true
				}
			}
			if empty && !polling {
				poll.Reset(rt.opts.PollInterval)
				polling = true
			}
		case <-rt.wake:
			all := rt.hinted.Swap(false)
			for _, q := range rt.queues {
				if q.freed.Swap(false) || all {
					q.want = true
				}
			}
		case <-poll.C:
			polling = false
			for _, q := range rt.queues {
				q.want = true
			}
		}
	}
	for ; l.inFlight > 0; l.inFlight-- {
		r := <-results
		for _, p := range r.parts {
			rt.start(ctx, base, jobs, p, r.at)
		}
	}
}

// claimLoopState is the claim loop's own bookkeeping.
type claimLoopState struct {
	multi    backend.QueuesClaimer // the store's, or nil
	inFlight int                   // claims under way
	reserved int                   // the runtime's slots they reserved
	next     int                   // the queue the next pass looks at first, round-robin
}

// startClaims starts the claims of one pass of the claim loop, for the
// queues that want one and have free slots, within claimsInFlight, and
// reports whether it started any. With a QueuesClaimer, the queues of the
// pass share one claim.
func (rt *Runtime) startClaims(ctx context.Context, l *claimLoopState, results chan<- claimed) bool {
	var batch []claimPart
	started := false
	first := l.next
	for i := range rt.queues {
		if l.inFlight >= claimsInFlight {
			break
		}
		q := rt.queues[(first+i)%len(rt.queues)]
		free := min(cap(rt.slots)-len(rt.slots)-l.reserved, q.free())
		if !q.want || free <= 0 {
			continue
		}
		l.next = (first + i + 1) % len(rt.queues)
		q.want = false
		limit := min(free, rt.opts.ClaimBatch)
		l.reserved += limit
		q.reserved += limit
		part := claimPart{q: q, limit: limit}
		if l.multi != nil {
			batch = append(batch, part)
			continue
		}
		l.inFlight++
		started = true
		go func() { results <- rt.claim(ctx, part) }()
	}
	switch {
	case len(batch) == 1: // the one-queue claim, as without a QueuesClaimer
		l.inFlight++
		go func() { results <- rt.claim(ctx, batch[0]) }()
	case len(batch) > 1:
		l.inFlight++
		go func() { results <- rt.claimQueues(ctx, l.multi, batch) }()
	}
	return started || len(batch) > 0
}

// queuesClaimer returns the store as a QueuesClaimer when it is one and
// the runtime serves several queues, else nil.
func (rt *Runtime) queuesClaimer() backend.QueuesClaimer {
	qc, ok := rt.opts.Store.(backend.QueuesClaimer)
	if !ok || len(rt.queues) < 2 {
		return nil
	}
	return qc
}

// start runs the jobs one claim took of the queue of p, each in a
// goroutine of jobs, or releases them when ctx is done or the store
// returned more than the claim asked for.
func (rt *Runtime) start(ctx, base context.Context, jobs *sync.WaitGroup, p claimPart, at time.Time) {
	for i, j := range p.jobs {
		if ctx.Err() != nil || i >= p.limit {
			// Shutting down, or a store that ignored the limit.
			rt.releaseUnstarted(base, j, at)
			continue
		}
		// Neither blocks: only the claim loop acquires, within its
		// reservation.
		rt.slots <- struct{}{}
		p.q.slots <- struct{}{}
		if rt.queueMetrics != nil {
			rt.queueMetrics.QueueRunning(p.q.name, 1)
		}
		jobs.Go(func() { rt.runJob(base, p.q, j, at) })
	}
}

// claim runs one Store.Claim of the queue of p. On error it returns no
// jobs.
func (rt *Runtime) claim(ctx context.Context, p claimPart) claimed {
	now := rt.now()
	cctx, cancel := context.WithTimeout(ctx, rt.opts.Lease)
	defer cancel()
	cp := backend.ClaimParams{Worker: rt.opts.Name, Kinds: *p.q.kinds.Load(), Queue: p.q.name, Limit: p.limit, Lease: rt.opts.Lease, Now: now}
	if rt.hold != nil {
		cp.Instance = rt.hold.ID()
	}
	jobs, err := rt.opts.Store.Claim(cctx, cp)
	if err != nil {
		if ctx.Err() == nil {
			rt.log.Error("worker: claim failed", "queue", p.q.name, "err", errText(err))
		}
		jobs = nil
	}
	p.jobs = jobs
	return claimed{parts: []claimPart{p}, at: now, err: err}
}

// claimQueues runs one ClaimQueues of the queues of parts. On error it
// returns no jobs. A store that returns another number of slices than of
// queues fails the claim too; the jobs it returned are not run, and wait
// for their leases.
func (rt *Runtime) claimQueues(ctx context.Context, qc backend.QueuesClaimer, parts []claimPart) claimed {
	now := rt.now()
	cctx, cancel := context.WithTimeout(ctx, rt.opts.Lease)
	defer cancel()
	qs := make([]backend.QueueClaim, len(parts))
	for i, p := range parts {
		qs[i] = backend.QueueClaim{Queue: p.q.name, Kinds: *p.q.kinds.Load(), Limit: p.limit}
	}
	cp := backend.ClaimParams{Worker: rt.opts.Name, Lease: rt.opts.Lease, Now: now}
	if rt.hold != nil {
		cp.Instance = rt.hold.ID()
	}
	jobs, err := qc.ClaimQueues(cctx, cp, qs)
	if err == nil && len(jobs) != len(parts) {
		err = fmt.Errorf("worker: the store's ClaimQueues returned %d slices of jobs for %d queues", len(jobs), len(parts))
	}
	if err != nil {
		if ctx.Err() == nil {
			rt.log.Error("worker: claim failed", "queues", len(parts), "err", errText(err))
		}
		return claimed{parts: parts, at: now, err: err}
	}
	for i := range parts {
		parts[i].jobs = jobs[i]
	}
	return claimed{parts: parts, at: now}
}
