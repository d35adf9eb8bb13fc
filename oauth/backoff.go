package oauth

import (
	"sync"
	"time"
)

// Spacing of the attempts after a failed request to the authorization
// server: the first retry may start firstRetry after the failure, each
// further one twice as late, up to maxRetry.
const (
	firstRetry = time.Second
	maxRetry   = 5 * time.Second
)

// backoff spaces the attempts at an authorization server endpoint that
// failed, so that an outage is retried soon after it ends, yet at most once
// per maxRetry however many requests arrive. It is safe for concurrent use.
type backoff struct {
	max time.Duration // the longest wait, at most maxRetry

	mu       sync.Mutex
	failures int       // consecutive failed attempts; 0: the last one succeeded
	retryAt  time.Time // when the next attempt may start, after a failure
}

func newBackoff(max time.Duration) *backoff {
	return &backoff{max: min(max, maxRetry)}
}

// failed records a failed attempt that ended at now.
func (b *backoff) failed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	wait := min(firstRetry, b.max)
	for i := 1; i < b.failures && wait < b.max; i++ {
		wait *= 2
	}
	b.retryAt = now.Add(min(wait, b.max))
}

// succeeded records a successful attempt.
func (b *backoff) succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures, b.retryAt = 0, time.Time{}
}

// wait reports whether the last attempt failed and, if so, how long from
// now until the next may start (0: at once).
func (b *backoff) wait(now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == 0 {
		return 0, false
	}
	return max(b.retryAt.Sub(now), 0), true
}
