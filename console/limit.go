package console

import (
	"container/list"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limits on failed sign-ins: a sign-in that presents a wrong credential
// (a form with the wrong token, or a request with an Authorization header
// the console refuses) takes a token from its client address's bucket and
// from one global bucket. While either is empty, a failed sign-in gets 429
// Too Many Requests with Retry-After instead of 401, and a sign-in from an
// address whose bucket is empty is refused so without its credential being
// checked, so that guessing cannot go faster than the bucket refills.
// Successful sign-ins and requests with a session cookie take nothing.

// Defaults of SignInLimit.
const (
	// DefaultSignInBurst and DefaultSignInEvery allow a client address
	// 10 failed sign-ins at once and one more every 6 seconds.
	DefaultSignInBurst = 10
	DefaultSignInEvery = 6 * time.Second
	// DefaultGlobalSignInBurst and DefaultGlobalSignInEvery allow all
	// addresses together 100 at once and one more every 600 ms.
	DefaultGlobalSignInBurst = 100
	DefaultGlobalSignInEvery = 600 * time.Millisecond
	// DefaultSignInAddresses bounds the addresses whose buckets are
	// remembered; the least recently used one is forgotten first.
	DefaultSignInAddresses = 4096
)

// SignInLimit is a token bucket of failed sign-ins: Burst at once, and
// one more every Every.
type SignInLimit struct {
	Burst int
	Every time.Duration
}

// bucket is a token bucket's state.
type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

// refill brings b up to now under l.
func (b *bucket) refill(l SignInLimit, now time.Time) {
	if el := now.Sub(b.at); el > 0 {
		b.tokens = math.Min(float64(l.Burst), b.tokens+float64(el)/float64(l.Every))
		b.at = now
	}
}

// wait is how long until b holds a whole token.
func (b *bucket) wait(l SignInLimit) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.Every))
}

// signInLimiter holds the global bucket and a bounded LRU of per-address
// ones. It is safe for concurrent use.
type signInLimiter struct {
	perAddr, global SignInLimit
	max             int

	mu     sync.Mutex
	all    bucket
	addrs  map[string]*list.Element // of *addrBucket
	recent *list.List               // most recently used first
}

type addrBucket struct {
	addr string
	b    bucket
}

func newSignInLimiter(perAddr, global SignInLimit, max int, now time.Time) *signInLimiter {
	return &signInLimiter{perAddr: perAddr, global: global, max: max,
		all: bucket{tokens: float64(global.Burst), at: now}, addrs: make(map[string]*list.Element), recent: list.New()}
}

// addrOf returns the bucket of addr, creating (and evicting) as needed.
// l.mu must be held.
func (l *signInLimiter) addrOf(addr string, now time.Time) *bucket {
	if e, ok := l.addrs[addr]; ok {
		l.recent.MoveToFront(e)
		ab := e.Value.(*addrBucket)
		ab.b.refill(l.perAddr, now)
		return &ab.b
	}
	for l.recent.Len() >= l.max {
		old := l.recent.Back()
		delete(l.addrs, old.Value.(*addrBucket).addr)
		l.recent.Remove(old)
	}
	ab := &addrBucket{addr: addr, b: bucket{tokens: float64(l.perAddr.Burst), at: now}}
	l.addrs[addr] = l.recent.PushFront(ab)
	return &ab.b
}

// blocked returns how long addr must wait before its next sign-in is
// checked; 0 when it may sign in now.
func (l *signInLimiter) blocked(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.addrs[addr]
	if !ok {
		return 0
	}
	ab := e.Value.(*addrBucket)
	ab.b.refill(l.perAddr, now)
	return ab.b.wait(l.perAddr)
}

// fail records a failed sign-in from addr and returns 0 when it was within
// the limits, else how long until both buckets hold a token again.
func (l *signInLimiter) fail(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrOf(addr, now)
	l.all.refill(l.global, now)
	if a.tokens >= 1 && l.all.tokens >= 1 {
		a.tokens--
		l.all.tokens--
		return 0
	}
	return max(a.wait(l.perAddr), l.all.wait(l.global))
}

// clientAddr is the request's client address: the host of RemoteAddr. A
// proxy's forwarding headers are not trusted.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tooManySignIns answers 429 with Retry-After (whole seconds, at least 1).
// The caller has written the audit line.
func (c *Console) tooManySignIns(w http.ResponseWriter, wait time.Duration) {
	secs := int64(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	http.Error(w, "Too many failed sign-ins. Try again later.", http.StatusTooManyRequests)
}

// signInBlocked returns how long a sign-in from addr must wait before its
// credential is checked, 0 when it may be checked now; when it must wait
// it writes the audit line.
func (c *Console) signInBlocked(via, addr string, now time.Time) time.Duration {
	wait := c.limits.blocked(addr, now)
	if wait > 0 {
		c.auditRateLimited(via)
	}
	return wait
}

// signInFailed records a failed sign-in from addr and returns 0 when it
// was within the limits, else how long to wait; then it writes the audit
// line.
func (c *Console) signInFailed(via, addr string, now time.Time) time.Duration {
	wait := c.limits.fail(addr, now)
	if wait > 0 {
		c.auditRateLimited(via)
	}
	return wait
}

// auditRateLimited writes the audit line of a sign-in refused by the
// limits: the credential kind and the category, nothing the client sent.
func (c *Console) auditRateLimited(via string) {
	c.log.Warn("console: sign-in refused", "operator", via, "reason", "rate_limited")
}
