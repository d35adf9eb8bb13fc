package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// DefaultProgressInterval is the default Options.ProgressInterval.
const DefaultProgressInterval = time.Second

// progressReport is one report: the message and, when counted, the count.
// It is held by value, so queueing a report allocates nothing.
type progressReport struct {
	message  string
	progress task.Progress
	counted  bool
}

// count returns the report's count, nil when it has none. The pointer is
// into r.
func (r *progressReport) count() *task.Progress {
	if !r.counted {
		return nil
	}
	return &r.progress
}

// checkProgress validates a report before it is queued.
func checkProgress(r progressReport) error {
	switch {
	case len(r.message) > backend.MaxProgressMessage:
		return fmt.Errorf("%w: the message exceeds %d bytes", backend.ErrInvalidProgress, backend.MaxProgressMessage)
	case !utf8.ValidString(r.message):
		return fmt.Errorf("%w: the message is not valid UTF-8", backend.ErrInvalidProgress)
	case r.counted && !r.progress.Valid():
		return fmt.Errorf("%w: the numbers must be finite and not negative", backend.ErrInvalidProgress)
	}
	for i := 0; i < len(r.message); i++ {
		if r.message[i] == 0 {
			return fmt.Errorf("%w: the message holds a NUL byte", backend.ErrInvalidProgress)
		}
	}
	return nil
}

// progressClock is the coalescer's clock: the runtime's Options.Now, or a
// test's fake.
type progressClock interface {
	Now() time.Time
}

// progressWaker wakes a coalescer that waits for its interval to end: after
// wakeAfter(d) it calls the coalescer's wake at least d later, unless the
// job has finished by then. The runtime's waker is the job's lease keeper,
// whose timer every job has anyway, so a report that waits costs no timer
// of its own.
type progressWaker interface {
	wakeAfter(d time.Duration)
}

// progressWriter makes one store write of a report and reports whether the
// value must be kept for another try (a transient failure).
type progressWriter interface {
	writeProgress(r progressReport) (retry bool)
}

// progressCoalescer turns a job's progress reports into at most one store
// write per interval: a report made less than an interval after the last
// write (or after the claim) waits for the interval to end, and a later
// report replaces it, so the last value is always the one written. Writes
// never overlap.
//
// It is a part of the Job, set up with init, and costs nothing until a
// report comes. When the waker wakes it at the end of the first interval
// anyway (waiting is set from the start), a report in a job that ends
// within the interval is a field write under the mutex, and the runtime
// takes it with finish for the job's final write. A write goroutine starts only when a write is
// due; it belongs to the job: finish waits for a write under way.
type progressCoalescer struct {
	clock    progressClock
	waker    progressWaker
	writer   progressWriter
	interval time.Duration

	mu         sync.Mutex
	pending    progressReport // valid when hasPending
	hasPending bool
	// high is the highest count of the task (valid when hasHigh): the
	// claim's, then the last report taken. See report.
	high     task.Progress
	hasHigh  bool
	last     time.Time // start of the last write, or the claim
	waiting  bool      // a wake is requested
	writing  bool
	finished bool
	active   sync.WaitGroup // write goroutines under way
}

// init prepares c for a run claimed at start whose task had the count
// high (nil: none); c must not be in use.
func (c *progressCoalescer) init(clock progressClock, waker progressWaker, writer progressWriter, interval time.Duration,
	start time.Time, high *task.Progress) {
	c.clock, c.waker, c.writer, c.interval, c.last = clock, waker, writer, interval, start
	if high != nil {
		c.high, c.hasHigh = *high, true
	}
}

// report queues r, replacing a value not yet written, and starts or
// schedules its write. It never blocks on the store.
//
// The count never goes backwards: a report whose current is below the
// highest count (the task's as of the claim, or an earlier report's) is
// dropped, and a report without numbers keeps that count, so that a
// re-run that starts over, or resumes from a checkpoint older than the
// last report, never shows a client less done than before.
func (c *progressCoalescer) report(r progressReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	switch {
	case !c.hasHigh:
	case !r.counted:
		r.progress, r.counted = c.high, true
	case r.progress.Current < c.high.Current:
		return
	}
	if r.counted {
		c.high, c.hasHigh = r.progress, true
	}
	c.pending, c.hasPending = r, true
	if !c.writing && !c.waiting {
		c.scheduleLocked()
	}
}

// scheduleLocked starts the pending write now when the interval since the
// last write has passed, or asks the waker for the moment it does.
func (c *progressCoalescer) scheduleLocked() {
	wait := c.last.Add(c.interval).Sub(c.clock.Now())
	if wait <= 0 {
		c.writing = true
		c.active.Add(1)
		go c.run()
		return
	}
	c.waiting = true
	c.waker.wakeAfter(wait)
}

// wake is the waker's call: it makes the pending write (in the caller's
// goroutine) when it is due, or asks to be woken again when it is not yet.
func (c *progressCoalescer) wake() {
	c.mu.Lock()
	c.waiting = false
	if c.finished || c.writing || !c.hasPending {
		c.mu.Unlock()
		return
	}
	if c.last.Add(c.interval).After(c.clock.Now()) {
		c.scheduleLocked()
		c.mu.Unlock()
		return
	}
	c.writing = true
	c.active.Add(1)
	c.mu.Unlock()
	c.run()
}

// run writes pending values until none is due; the caller has set writing
// and added to active.
func (c *progressCoalescer) run() {
	defer c.active.Done()
	c.mu.Lock()
	for c.hasPending && !c.finished {
		r := c.pending
		c.hasPending = false
		c.last = c.clock.Now()
		c.mu.Unlock()
		retry := c.writer.writeProgress(r)
		c.mu.Lock()
		if retry && !c.hasPending {
			c.pending, c.hasPending = r, true
		}
		if c.hasPending && !c.finished && c.last.Add(c.interval).After(c.clock.Now()) {
			c.writing = false
			c.scheduleLocked()
			c.mu.Unlock()
			return
		}
	}
	c.writing = false
	c.mu.Unlock()
}

// finish stops the coalescer, waits for a write under way, and returns
// the report not yet written, if any: the runtime writes it right before
// the job's final write. The report stays valid and unchanged: it points
// into c, which takes no report after finish.
func (c *progressCoalescer) finish() *progressReport {
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
	c.active.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasPending {
		return nil
	}
	c.hasPending = false
	return &c.pending
}

// runtimeClock is the runtime's progressClock.
type runtimeClock struct{ rt *Runtime }

func (c runtimeClock) Now() time.Time { return c.rt.now() }

// startProgress sets up the progress reports of jc's run, when the store
// records them; k wakes the reports that wait.
func (rt *Runtime) startProgress(jc *Job, k *leaseKeeper, claimedAt time.Time) {
	if _, ok := rt.opts.Store.(backend.ProgressReporter); !ok {
		return
	}
	jc.reports = true
	jc.progress.init(runtimeClock{rt}, k, jc, rt.opts.ProgressInterval, claimedAt, jc.job.Progress)
	k.attach(&jc.progress)
}

// writeProgress is the progressWriter of a run: one fenced write of r. A
// write that found the lease lost cancels the handler.
func (j *Job) writeProgress(r progressReport) bool {
	rt := j.run.rt
	pr := rt.opts.Store.(backend.ProgressReporter) // startProgress checked it
	err := rt.writeProgress(j.run.base, pr, j.job.Lease, r)
	switch {
	case err == nil:
		return false
	case errors.Is(err, backend.ErrLeaseLost):
		j.loseLease()
		return false
	default:
		rt.log.Warn("worker: progress write failed; the last report is kept for the next interval", "kind", j.run.kind,
			"attempt", j.job.AttemptNumber(), "err", errText(err))
		return true
	}
}

// writeProgress makes one progress write, bounded by HeartbeatEvery.
func (rt *Runtime) writeProgress(base context.Context, pr backend.ProgressReporter, l backend.Lease, r progressReport) error {
	ctx, cancel := context.WithTimeout(base, rt.opts.HeartbeatEvery)
	defer cancel()
	err := pr.ReportProgress(ctx, l, r.message, r.count())
	if err == nil {
		runSpanOf(base).Progress()
	}
	return err
}

// flushProgress writes a report still pending when the handler returned,
// right before the job's final write. Failures are logged; the final write
// goes on (and meets a lost lease itself).
func (rt *Runtime) flushProgress(base context.Context, j backend.JobRow, kind string, r *progressReport) {
	pr, ok := rt.opts.Store.(backend.ProgressReporter)
	if r == nil || !ok {
		return
	}
	if err := rt.writeProgress(base, pr, j.Lease, *r); err != nil && !errors.Is(err, backend.ErrLeaseLost) {
		rt.log.Warn("worker: the last progress write failed", "kind", kind, "attempt", j.AttemptNumber(), "err", errText(err))
	}
}
