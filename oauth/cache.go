package oauth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// tokenKey identifies a token in a cache: its SHA-256, never the token.
type tokenKey = [sha256.Size]byte

// lru is a bounded cache of values that expire, by token hash; when full,
// the least recently used entry goes first. It is safe for concurrent use.
type lru[V any] struct {
	size int

	mu    sync.Mutex
	byKey map[tokenKey]*list.Element
	order *list.List // of *lruEntry[V], most recently used first
}

type lruEntry[V any] struct {
	key     tokenKey
	val     V
	expires time.Time
}

func newLRU[V any](size int) *lru[V] {
	return &lru[V]{size: size, byKey: make(map[tokenKey]*list.Element), order: list.New()}
}

// get returns the value for key unless it is missing or expired at now.
func (c *lru[V]) get(key tokenKey, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.byKey[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// put stores val for key until expires, evicting the least recently used
// entries beyond the size.
func (c *lru[V]) put(key tokenKey, val V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
	for c.order.Len() >= c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*lruEntry[V]).key)
	}
	c.byKey[key] = c.order.PushFront(&lruEntry[V]{key: key, val: val, expires: expires})
}
