package oauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// replayCache remembers DPoP proofs, by a hash of their key and jti, until
// they expire: at most size of them, first in first out. Every entry lives
// equally long, so the oldest is the first to expire. It is safe for
// concurrent use.
type replayCache struct {
	size int

	mu    sync.Mutex
	seen  map[tokenKey]struct{}
	queue []replayEntry // by insertion; the live ones from head on
	head  int
}

type replayEntry struct {
	key     tokenKey
	expires time.Time
}

// addResult is what replayCache.add did.
type addResult int

const (
	added addResult = iota
	replayed
	full
)

func newReplayCache(size int) *replayCache {
	return &replayCache{size: size, seen: make(map[tokenKey]struct{})}
}

// add records key until expires, after dropping the entries expired at
// now; it reports a key already there, and a cache full of live entries
// (then key is not recorded).
func (c *replayCache) add(key tokenKey, now, expires time.Time) addResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.head < len(c.queue) && !now.Before(c.queue[c.head].expires) {
		delete(c.seen, c.queue[c.head].key)
		c.queue[c.head] = replayEntry{}
		c.head++
	}
	if c.head > 0 && c.head >= len(c.queue)/2 { // reuse the drained front
		c.queue = append(c.queue[:0], c.queue[c.head:]...)
		c.head = 0
	}
	if _, ok := c.seen[key]; ok {
		return replayed
	}
	if len(c.seen) >= c.size {
		return full
	}
	c.seen[key] = struct{}{}
	c.queue = append(c.queue, replayEntry{key: key, expires: expires})
	return added
}

// nonceSource issues the server-provided DPoP nonces (RFC 9449 §9) without
// storing them: the nonce of a period is the period's number and an HMAC
// of it under a secret drawn at start. The nonce of the current period and
// of the one before are valid.
type nonceSource struct {
	secret   []byte
	lifetime time.Duration
	now      func() time.Time

	mu      sync.Mutex
	period  int64
	current string
}

// nonceBytes: an 8-byte period and a 16-byte MAC.
const nonceBytes = 8 + 16

func newNonceSource(lifetime time.Duration, now func() time.Time) (*nonceSource, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("oauth: DPoP nonce secret: %w", err)
	}
	return &nonceSource{secret: secret, lifetime: lifetime, now: now, period: -1}, nil
}

// issue returns the current period's nonce.
func (n *nonceSource) issue() string {
	p := n.now().UnixNano() / int64(n.lifetime)
	n.mu.Lock()
	defer n.mu.Unlock()
	if p != n.period {
		n.period, n.current = p, base64.RawURLEncoding.EncodeToString(n.sign(p))
	}
	return n.current
}

// valid reports whether s is the nonce of the current period or the one
// before.
func (n *nonceSource) valid(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(nonceBytes) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != nonceBytes {
		return false
	}
	p := int64(binary.BigEndian.Uint64(b))
	cur := n.now().UnixNano() / int64(n.lifetime)
	if p != cur && p != cur-1 {
		return false
	}
	return hmac.Equal(b, n.sign(p))
}

// sign is the nonce of period p: p and its MAC.
func (n *nonceSource) sign(p int64) []byte {
	out := binary.BigEndian.AppendUint64(make([]byte, 0, nonceBytes), uint64(p))
	mac := hmac.New(sha256.New, n.secret)
	mac.Write(out)
	return mac.Sum(out)[:nonceBytes]
}
