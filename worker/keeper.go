package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// leaseKeeper keeps a running job's lease: it heartbeats every
// HeartbeatEvery and reads the task's cancel intent after each heartbeat and
// on each event hint. It runs on a timer and on goroutines that live only
// while a heartbeat or a cancel check is under way, so a job between
// heartbeats costs no goroutine. Its goroutines belong to the job: stop
// waits for them.
type leaseKeeper struct {
	rt     *Runtime
	base   context.Context // for store calls; outlives the handler
	jctx   context.Context // the handler's context
	cancel context.CancelCauseFunc
	lease  backend.Lease
	kind   string

	mu       sync.Mutex
	expires  time.Time // local lease deadline: last heartbeat (or claim) + Lease
	stopped  bool
	checking bool // a cancel check goroutine runs
	again    bool // a hint arrived during that check: check once more
	timer    *time.Timer
	active   sync.WaitGroup // heartbeat and check goroutines under way
}

// keepLease starts keeping j's lease, whose local deadline is expires.
func (rt *Runtime) keepLease(base, jctx context.Context, cancel context.CancelCauseFunc, j backend.JobRow, kind string,
	expires time.Time) *leaseKeeper {
	k := &leaseKeeper{rt: rt, base: base, jctx: jctx, cancel: cancel, lease: j.Lease, kind: kind, expires: expires}
	k.mu.Lock()
	k.timer = time.AfterFunc(rt.opts.HeartbeatEvery, k.beat)
	k.mu.Unlock()
	return k
}

// stop ends the keeping, waits for a heartbeat or check under way, and
// returns the local lease deadline.
func (k *leaseKeeper) stop() time.Time {
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
	k.active.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.expires
}

// begin registers a goroutine of the keeper, unless it was stopped.
func (k *leaseKeeper) begin() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return false
	}
	k.active.Add(1)
	return true
}

// beat is the timer's function: one heartbeat, then a cancel check, then
// the next heartbeat is scheduled. A heartbeat that finds the lease gone, or
// a local deadline that passed while heartbeats failed, cancels the handler
// with cause backend.ErrLeaseLost and ends the heartbeats.
func (k *leaseKeeper) beat() {
	if !k.begin() {
		return
	}
	defer k.active.Done()
	rt := k.rt
	sent := rt.now()
	k.mu.Lock()
	expires := k.expires
	k.mu.Unlock()
	if !sent.Before(expires) {
		rt.loseLease(k.cancel, k.kind, k.lease.Attempt)
		return
	}
	ctx, done := context.WithTimeout(k.base, rt.opts.HeartbeatEvery)
	err := rt.opts.Store.Heartbeat(ctx, k.lease, rt.opts.Lease)
	done()
	switch {
	case err == nil:
		k.mu.Lock()
		k.expires = sent.Add(rt.opts.Lease)
		k.mu.Unlock()
	case errors.Is(err, backend.ErrLeaseLost):
		rt.loseLease(k.cancel, k.kind, k.lease.Attempt)
		return
	default:
		rt.log.Warn("worker: heartbeat failed", "kind", k.kind, "attempt", k.lease.Attempt, "err", errText(err))
	}
	rt.checkCancel(k.base, k.jctx, k.cancel, k.lease.TaskID, k.kind)
	k.mu.Lock()
	if !k.stopped {
		k.timer.Reset(rt.opts.HeartbeatEvery)
	}
	k.mu.Unlock()
}

// hinted asks for a cancel check without blocking. Checks do not overlap;
// a hint that arrives during one causes one more check after it, so a
// cancellation committed before the hint is always seen.
func (k *leaseKeeper) hinted() {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.stopped:
	case k.checking:
		k.again = true
	default:
		k.checking = true
		k.active.Add(1)
		go k.checkLoop()
	}
}

func (k *leaseKeeper) checkLoop() {
	defer k.active.Done()
	for {
		k.rt.checkCancel(k.base, k.jctx, k.cancel, k.lease.TaskID, k.kind)
		k.mu.Lock()
		if k.again && !k.stopped {
			k.again = false
			k.mu.Unlock()
			continue
		}
		k.checking, k.again = false, false
		k.mu.Unlock()
		return
	}
}
