package server

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// RateLimiter decides whether a request in the partition key may proceed.
// When it may not, Allow returns false and how long the client should wait.
// Implementations must be safe for concurrent use.
type RateLimiter interface {
	Allow(key string) (ok bool, retryAfter time.Duration)
}

// TokenBucketOptions configure NewTokenBucket.
type TokenBucketOptions struct {
	// Rate is the number of tokens added per second. Required: finite and
	// positive.
	Rate float64
	// Burst is the bucket capacity. Zero means max(1, Rate); otherwise it
	// must be finite and at least 1, since a request takes a whole token
	// and a bucket that never holds one would refuse every request.
	Burst float64
	// MaxKeys bounds the number of partitions tracked at once; when it is
	// reached, buckets that have refilled completely are forgotten, and if
	// none has, new partitions are denied until one does. Zero means 8192;
	// it must not be negative.
	MaxKeys int
	// Now is the clock; nil means time.Now. Tests inject their own.
	Now func() time.Time
}

// TokenBucket is a RateLimiter with one token bucket per partition key.
type TokenBucket struct {
	opts    TokenBucketOptions
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewTokenBucket returns a token-bucket RateLimiter. It fails, naming
// every field at fault, when Rate is not finite and positive, when Burst
// is negative, not finite or between 0 and 1 (such a bucket never holds a
// whole token and would refuse every request), or when MaxKeys is
// negative.
func NewTokenBucket(opts TokenBucketOptions) (*TokenBucket, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Burst == 0 {
		opts.Burst = max(1, opts.Rate)
	}
	if opts.MaxKeys == 0 {
		opts.MaxKeys = 8192
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &TokenBucket{opts: opts, buckets: make(map[string]*bucket)}, nil
}

// validate reports every problem of the options as given (zero means the
// default), joined into one error, or nil.
func (o TokenBucketOptions) validate() error {
	var errs []error
	if math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate <= 0 {
		errs = append(errs, fmt.Errorf("server: TokenBucketOptions.Rate must be finite and positive, got %v", o.Rate))
	}
	if math.IsNaN(o.Burst) || math.IsInf(o.Burst, 0) || o.Burst < 0 || (o.Burst > 0 && o.Burst < 1) {
		errs = append(errs, fmt.Errorf("server: TokenBucketOptions.Burst must be zero (the default) or a finite number of at least 1, got %v", o.Burst))
	}
	if o.MaxKeys < 0 {
		errs = append(errs, fmt.Errorf("server: TokenBucketOptions.MaxKeys must not be negative (zero means the default), got %d", o.MaxKeys))
	}
	return errors.Join(errs...)
}

// maxWait caps the wait Allow reports, so that a very low Rate cannot
// overflow a time.Duration.
const maxWait = 100 * 365 * 24 * time.Hour

// waitFor is how long a bucket holding tokens takes to hold one, at most
// maxWait.
func (tb *TokenBucket) waitFor(tokens float64) time.Duration {
	secs := (1 - tokens) / tb.opts.Rate
	if !(secs < maxWait.Seconds()) {
		return maxWait
	}
	return time.Duration(secs * float64(time.Second))
}

// Allow takes one token from key's bucket.
func (tb *TokenBucket) Allow(key string) (bool, time.Duration) {
	now := tb.opts.Now()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	b, ok := tb.buckets[key]
	if !ok {
		if len(tb.buckets) >= tb.opts.MaxKeys && !tb.evictFullLocked(now) {
			return false, tb.waitFor(0)
		}
		b = &bucket{tokens: tb.opts.Burst, last: now}
		tb.buckets[key] = b
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(tb.opts.Burst, b.tokens+el.Seconds()*tb.opts.Rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, tb.waitFor(b.tokens)
}

// evictFullLocked forgets every bucket that has refilled to capacity and
// reports whether any was forgotten.
func (tb *TokenBucket) evictFullLocked(now time.Time) bool {
	n := len(tb.buckets)
	for k, b := range tb.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*tb.opts.Rate >= tb.opts.Burst {
			delete(tb.buckets, k)
		}
	}
	return len(tb.buckets) < n
}
