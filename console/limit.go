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
// the console refuses) takes a token from its client address's bucket,
// from the bucket of its credential's class, and from one global bucket.
// The class is one of credentialClasses, picked by a keyed hash of the
// presented credential: a wrong token always lands in the same class, the
// right one in a class nobody can aim at. While any of its buckets is
// empty, a failed sign-in gets 429 Too Many Requests with Retry-After
// instead of 401. A sign-in is refused so without its credential being
// checked only while both its address's bucket and its class's bucket are
// empty: the wrong tokens tried from an address (say, a proxy many
// operators share) do not lock the right token out, which a bucket of its
// own class stops only after failures that collide with it, and guessing
// still goes no faster than the address buckets and the class buckets,
// all of them, refill. Successful sign-ins and requests with a session
// cookie take nothing.

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
	// DefaultCredentialSignInBurst and DefaultCredentialSignInEvery allow
	// each of the 256 credential classes 5 failed sign-ins at once and one
	// more every 5 minutes.
	DefaultCredentialSignInBurst = 5
	DefaultCredentialSignInEvery = 5 * time.Minute
)

// credentialClasses is the number of credential classes, each with a
// bucket of Options.SignInPerCredential.
const credentialClasses = 256

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

// signInLimiter holds the global bucket, one per credential class and a
// bounded LRU of per-address ones. It is safe for concurrent use.
type signInLimiter struct {
	perAddr, perClass, global SignInLimit
	max                       int

	mu      sync.Mutex
	all     bucket
	classes [credentialClasses]bucket
	addrs   map[string]*list.Element // of *addrBucket
	recent  *list.List               // most recently used first
}

type addrBucket struct {
	addr string
	b    bucket
}

func newSignInLimiter(perAddr, perClass, global SignInLimit, max int, now time.Time) *signInLimiter {
	l := &signInLimiter{perAddr: perAddr, perClass: perClass, global: global, max: max,
		all: bucket{tokens: float64(global.Burst), at: now}, addrs: make(map[string]*list.Element), recent: list.New()}
	for i := range l.classes {
		l.classes[i] = bucket{tokens: float64(perClass.Burst), at: now}
	}
	return l
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

// blocked returns how long a sign-in from addr with a credential of class
// cls must wait before it is checked: 0 when its address's bucket or its
// class's bucket holds a token, else until one of them does.
func (l *signInLimiter) blocked(addr string, cls uint8, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.addrs[addr]
	if !ok {
		return 0
	}
	ab := e.Value.(*addrBucket)
	ab.b.refill(l.perAddr, now)
	c := &l.classes[cls]
	c.refill(l.perClass, now)
	return min(ab.b.wait(l.perAddr), c.wait(l.perClass))
}

// fail records a failed sign-in from addr with a credential of class cls:
// it takes a token from each of the three buckets that holds one, and
// returns 0 when all three did, else how long until they all do again.
func (l *signInLimiter) fail(addr string, cls uint8, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrOf(addr, now)
	c := &l.classes[cls]
	c.refill(l.perClass, now)
	l.all.refill(l.global, now)
	var wait time.Duration
	for _, b := range []struct {
		b *bucket
		l SignInLimit
	}{{a, l.perAddr}, {c, l.perClass}, {&l.all, l.global}} {
		if b.b.tokens >= 1 {
			b.b.tokens--
		} else {
			wait = max(wait, b.b.wait(b.l))
		}
	}
	return wait
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

// signInBlocked returns how long a sign-in from addr presenting cred must
// wait before cred is checked, 0 when it may be checked now; when it must
// wait it writes the audit line.
func (c *Console) signInBlocked(via, addr, cred string, now time.Time) time.Duration {
	wait := c.limits.blocked(addr, c.keys.signInClass(cred), now)
	if wait > 0 {
		c.auditRateLimited(via)
	}
	return wait
}

// signInFailed records a failed sign-in from addr presenting cred and
// returns 0 when it was within the limits, else how long to wait; then it
// writes the audit line.
func (c *Console) signInFailed(via, addr, cred string, now time.Time) time.Duration {
	wait := c.limits.fail(addr, c.keys.signInClass(cred), now)
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
