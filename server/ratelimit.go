package server

import (
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
	// Rate is the number of tokens added per second. Required, > 0.
	Rate float64
	// Burst is the bucket capacity. Zero means max(1, Rate).
	Burst float64
	// MaxKeys bounds the number of partitions tracked at once; when it is
	// reached, buckets that have refilled completely are forgotten, and if
	// none has, new partitions are denied until one does. Zero means 8192.
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

// NewTokenBucket returns a token-bucket RateLimiter. It panics if
// opts.Rate is not positive, which is a configuration error.
func NewTokenBucket(opts TokenBucketOptions) *TokenBucket {
	if !(opts.Rate > 0) {
		panic("server: TokenBucketOptions.Rate must be positive")
	}
	if opts.Burst <= 0 {
		opts.Burst = max(1, opts.Rate)
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 8192
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &TokenBucket{opts: opts, buckets: make(map[string]*bucket)}
}

// Allow takes one token from key's bucket.
func (tb *TokenBucket) Allow(key string) (bool, time.Duration) {
	now := tb.opts.Now()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	b, ok := tb.buckets[key]
	if !ok {
		if len(tb.buckets) >= tb.opts.MaxKeys && !tb.evictFullLocked(now) {
			return false, time.Duration(float64(time.Second) / tb.opts.Rate)
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
	wait := (1 - b.tokens) / tb.opts.Rate
	return false, time.Duration(wait * float64(time.Second))
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
