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
// on each event hint. It runs on one timer and on goroutines that live only
// while a heartbeat, a cancel check or a progress write is under way, so a
// job between heartbeats costs no goroutine. The same timer wakes the job's
// progress reports that wait for their interval (see progressWaker), so a
// report costs no timer of its own. Its goroutines belong to the job: stop
// waits for them.
type leaseKeeper struct {
	rt     *Runtime
	base   context.Context // for store calls; outlives the handler
	jctx   context.Context // the handler's context
	cancel context.CancelCauseFunc
	lease  backend.Lease
	// attempt is the run's attempt number, for the logs.
	attempt int64
	kind    string

	mu         sync.Mutex
	expires    time.Time // local lease deadline: last heartbeat (or claim) + Lease
	stopped    bool
	checking   bool // a cancel check goroutine runs
	again      bool // a hint arrived during that check: check once more
	timer      *time.Timer
	armed      time.Time          // when the timer fires; zero while it runs
	beatAt     time.Time          // when the next heartbeat is due
	beating    bool               // a heartbeat is under way
	progress   *progressCoalescer // the job's reports, or nil
	job        *Job               // the run's Job, whose CheckpointLater value a heartbeat writes; nil until attached
	progressAt time.Time          // when progress asked to be woken; zero: not asked
	active     sync.WaitGroup     // heartbeat, check and wake goroutines under way
}

// keepLease starts keeping j's lease, whose local deadline is expires.
// When the store records progress and ProgressInterval is not longer than
// HeartbeatEvery, the timer first fires one ProgressInterval after the
// claim and wakes the run's progress then: the first report of a run,
// which waits for that moment, needs neither a clock read nor a change to
// the timer (see attach).
func (rt *Runtime) keepLease(base, jctx context.Context, cancel context.CancelCauseFunc, j backend.JobRow, kind string,
	expires time.Time) *leaseKeeper {
	k := &leaseKeeper{rt: rt, base: base, jctx: jctx, cancel: cancel, lease: j.Lease, attempt: j.AttemptNumber(), kind: kind,
		expires: expires}
	first := rt.opts.HeartbeatEvery
	_, reports := rt.opts.Store.(backend.ProgressReporter)
	if reports && rt.opts.ProgressInterval <= first {
		first = rt.opts.ProgressInterval
	}
	now := time.Now()
	k.mu.Lock()
	k.beatAt, k.armed = now.Add(rt.opts.HeartbeatEvery), now.Add(first)
	if reports && first == rt.opts.ProgressInterval {
		k.progressAt = k.armed
	}
	k.timer = time.AfterFunc(first, k.tick)
	k.mu.Unlock()
	return k
}

// attach makes k the waker of p, before p is in use. When k's timer will
// wake the progress anyway (see keepLease), p starts out waiting for it.
func (k *leaseKeeper) attach(p *progressCoalescer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// p is not shared yet: tick sees it only once k.mu is released.
	p.waiting = !k.progressAt.IsZero()
	k.progress = p
}

// attachJob makes each heartbeat write the value jc's CheckpointLater
// holds.
func (k *leaseKeeper) attachJob(jc *Job) {
	k.mu.Lock()
	k.job = jc
	k.mu.Unlock()
}

// wakeAfter implements progressWaker: the timer calls the coalescer's wake
// d from now, or later. It moves the timer only when it would fire too late.
func (k *leaseKeeper) wakeAfter(d time.Duration) {
	at := time.Now().Add(d)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if k.progressAt.IsZero() || at.Before(k.progressAt) {
		k.progressAt = at
	}
	k.armLocked()
}

// armLocked sets the timer for the next heartbeat or progress wake, unless
// it fires earlier anyway.
func (k *leaseKeeper) armLocked() {
	var next time.Time
	if !k.beating {
		next = k.beatAt
	}
	if !k.progressAt.IsZero() && (next.IsZero() || k.progressAt.Before(next)) {
		next = k.progressAt
	}
	if next.IsZero() || (!k.armed.IsZero() && !next.Before(k.armed)) {
		return
	}
	k.armed = next
	k.timer.Reset(time.Until(next))
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

// tick is the timer's function: it wakes the job's progress reports and
// heartbeats, as each is due, and sets the timer for what comes next.
func (k *leaseKeeper) tick() {
	now := time.Now()
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.armed = time.Time{}
	p := k.progress
	wake := !k.progressAt.IsZero() && !now.Before(k.progressAt)
	if wake {
		k.progressAt = time.Time{}
		if wake = p != nil; wake { // nil: not attached yet, so nothing waits
			k.active.Add(1)
		}
	}
	beat := !k.beating && !now.Before(k.beatAt)
	if beat {
		k.beating = true
		k.active.Add(1)
	}
	k.armLocked()
	k.mu.Unlock()
	switch {
	case wake && beat: // rare: both due at once; neither waits for the other
		go func() {
			defer k.active.Done()
			p.wake()
		}()
	case wake:
		defer k.active.Done()
		p.wake()
	}
	if beat {
		k.beat()
	}
}

// beat is one heartbeat, then a cancel check, then the next heartbeat is
// scheduled; tick has set beating and added to active. A heartbeat that
// finds the lease gone, or a local deadline that passed while heartbeats
// failed, cancels the handler with cause backend.ErrLeaseLost and ends the
// heartbeats.
func (k *leaseKeeper) beat() {
	defer k.active.Done()
	rt := k.rt
	sent := rt.now()
	k.mu.Lock()
	expires := k.expires
	k.mu.Unlock()
	if !sent.Before(expires) {
		rt.loseLease(k.cancel, k.kind, k.attempt)
		return
	}
	ctx, done := context.WithTimeout(k.base, rt.opts.HeartbeatEvery)
	err := rt.opts.Store.Heartbeat(ctx, k.lease, rt.opts.Lease)
	done()
	switch {
	case err == nil:
		k.mu.Lock()
		k.expires = sent.Add(rt.opts.Lease)
		j := k.job
		k.mu.Unlock()
		if j != nil && rt.checkpoints != nil {
			j.flushLater()
		}
	case errors.Is(err, backend.ErrLeaseLost):
		rt.loseLease(k.cancel, k.kind, k.attempt)
		return
	default:
		rt.log.Warn("worker: heartbeat failed", "kind", k.kind, "attempt", k.attempt, "err", errText(err))
	}
	rt.checkCancel(k.base, k.jctx, k.cancel, k.lease.TaskID, k.kind)
	k.mu.Lock()
	if !k.stopped {
		k.beating = false
		k.beatAt = time.Now().Add(rt.opts.HeartbeatEvery)
		k.armLocked()
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
