package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// Default backoff parameters.
const (
	backoffBase = time.Second
	backoffCap  = 5 * time.Minute
)

// DefaultBackoff is the default Options.Backoff: exponential with jitter.
// For the n-th failure (n >= 1) the ceiling is min(5 min, 1 s·2^(n-1)), and
// the delay is uniformly random between half the ceiling and the ceiling, so
// retries of jobs that failed together spread out while every wait keeps at
// least half its length. The first retry comes after 0.5–1 s; with
// backend.DefaultMaxAttempts (10) the nine waits before the final failure
// add up to 255.5–511 s, so a fault that lasts up to about four minutes
// never fails a task, and a handler that reports a longer one with
// Unavailable is retried every 2.5–5 min until Options.RetryWindow has
// passed. n < 1 is treated as 1.
func DefaultBackoff(failures int) time.Duration {
	if failures < 1 {
		failures = 1
	}
	ceiling := backoffCap
	if shift := failures - 1; shift < 30 { // 2^30 s is far above the cap
		if d := backoffBase << shift; d < ceiling {
			ceiling = d
		}
	}
	half := ceiling / 2
	return half + rand.N(ceiling-half+1)
}

// Final writes that fail for a reason other than backend.ErrLeaseLost are retried
// this many times in all, with a doubling pause from writeRetryPause, while
// the lease is still valid locally.
const (
	writeAttempts   = 3
	writeRetryPause = 100 * time.Millisecond
)

// batchTimeout bounds one CompleteBatch call.
const batchTimeout = 30 * time.Second

// write runs one fenced store write. Transient failures are retried while
// the lease, which ends at expires by the local clock, still has room;
// backend.ErrLeaseLost and backend.ErrKeyReused are returned at once, since
// retrying cannot change them. Each try is bounded by the lease duration.

func (rt *Runtime) write(base context.Context, expires time.Time, fn func(ctx context.Context) error) error {
	pause := writeRetryPause
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(base, rt.opts.Lease)
		err := fn(ctx)
		cancel()
		if err == nil || errors.Is(err, backend.ErrLeaseLost) || errors.Is(err, backend.ErrKeyReused) {
			return err
		}
		if try >= writeAttempts || !rt.now().Add(pause).Before(expires) {
			return err
		}
		t := time.NewTimer(pause)
		<-t.C
		pause *= 2
	}
}
