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

// progressReport is one report: the message and the optional count.
type progressReport struct {
	message  string
	progress *task.Progress
}

// checkProgress validates a report before it is queued.
func checkProgress(r progressReport) error {
	switch {
	case len(r.message) > backend.MaxProgressMessage:
		return fmt.Errorf("%w: the message exceeds %d bytes", backend.ErrInvalidProgress, backend.MaxProgressMessage)
	case !utf8.ValidString(r.message):
		return fmt.Errorf("%w: the message is not valid UTF-8", backend.ErrInvalidProgress)
	case r.progress != nil && !r.progress.Valid():
		return fmt.Errorf("%w: the numbers must be finite and not negative", backend.ErrInvalidProgress)
	}
	for i := 0; i < len(r.message); i++ {
		if r.message[i] == 0 {
			return fmt.Errorf("%w: the message holds a NUL byte", backend.ErrInvalidProgress)
		}
	}
	return nil
}

// progressClock is the coalescer's clock: the runtime's Options.Now with
// timers from package time, or a test's fake.
type progressClock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// runtimeClock is the runtime's progressClock.
type runtimeClock struct{ now func() time.Time }

func (c runtimeClock) Now() time.Time { return c.now() }
func (c runtimeClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// progressCoalescer turns a job's progress reports into at most one store
// write per interval: a report made less than an interval after the last
// write (or after the claim) waits for the interval to end, and a later
// report replaces it, so the last value is always the one written. Writes
// never overlap. Its timer and write goroutines belong to the job: finish
// stops them and waits for a write under way.
type progressCoalescer struct {
	clock    progressClock
	interval time.Duration
	// write makes one store write and reports whether the value must be
	// kept for another try (a transient failure).
	write func(r progressReport) (retry bool)

	mu       sync.Mutex
	pending  *progressReport
	last     time.Time   // start of the last write, or the claim
	stop     func() bool // the scheduled write's timer, or nil
	writing  bool
	finished bool
	active   sync.WaitGroup // write goroutines under way
}

func newProgressCoalescer(clock progressClock, interval time.Duration, start time.Time,
	write func(progressReport) bool) *progressCoalescer {
	return &progressCoalescer{clock: clock, interval: interval, last: start, write: write}
}

// report queues r, replacing a value not yet written, and starts or
// schedules its write. It never blocks on the store.
func (c *progressCoalescer) report(r progressReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	c.pending = &r
	if !c.writing && c.stop == nil {
		c.scheduleLocked()
	}
}

// scheduleLocked starts the pending write now when the interval since the
// last write has passed, or arms the timer for the moment it does.
func (c *progressCoalescer) scheduleLocked() {
	wait := c.last.Add(c.interval).Sub(c.clock.Now())
	if wait <= 0 {
		c.writing = true
		c.active.Add(1)
		go c.run()
		return
	}
	c.stop = c.clock.AfterFunc(wait, c.fire)
}

// fire is the timer's function.
func (c *progressCoalescer) fire() {
	c.mu.Lock()
	c.stop = nil
	if c.finished || c.writing || c.pending == nil {
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
	for c.pending != nil && !c.finished {
		r := *c.pending
		c.pending = nil
		c.last = c.clock.Now()
		c.mu.Unlock()
		retry := c.write(r)
		c.mu.Lock()
		if retry && c.pending == nil {
			c.pending = &r
		}
		if c.pending != nil && !c.finished && c.last.Add(c.interval).After(c.clock.Now()) {
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
// the job's final write.
func (c *progressCoalescer) finish() *progressReport {
	c.mu.Lock()
	c.finished = true
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	c.mu.Unlock()
	c.active.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.pending
	c.pending = nil
	return r
}

// newJobProgress returns the coalescer of one run, or nil when the store
// records no progress.
func (rt *Runtime) newJobProgress(base context.Context, j backend.JobRow, kind string, claimedAt time.Time,
	lost func()) *progressCoalescer {
	pr, ok := rt.opts.Store.(backend.ProgressReporter)
	if !ok {
		return nil
	}
	return newProgressCoalescer(runtimeClock{rt.now}, rt.opts.ProgressInterval, claimedAt, func(r progressReport) bool {
		err := rt.writeProgress(base, pr, j.Lease, r)
		switch {
		case err == nil:
			return false
		case errors.Is(err, backend.ErrLeaseLost):
			lost()
			return false
		default:
			rt.log.Warn("worker: progress write failed; the last report is kept for the next interval", "kind", kind,
				"attempt", j.Attempt, "err", errText(err))
			return true
		}
	})
}

// writeProgress makes one progress write, bounded by HeartbeatEvery.
func (rt *Runtime) writeProgress(base context.Context, pr backend.ProgressReporter, l backend.Lease, r progressReport) error {
	ctx, cancel := context.WithTimeout(base, rt.opts.HeartbeatEvery)
	defer cancel()
	err := pr.ReportProgress(ctx, l, r.message, r.progress)
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
		rt.log.Warn("worker: the last progress write failed", "kind", kind, "attempt", j.Attempt, "err", errText(err))
	}
}
