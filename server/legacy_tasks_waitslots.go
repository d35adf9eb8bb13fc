package server

import "sync"

// DefaultMaxTaskWaits is the default of Options.MaxTaskWaits.
const DefaultMaxTaskWaits = 1024

// errTooManyWaits refuses a long wait beyond Options.MaxTaskWaits on the
// node or its share for one principal: the server is busy, as when the
// handler pool is full.
var errTooManyWaits = errQueueFull

// waitSlots bounds the long waits of 2025-era requests (tasks/result and
// tools/call waiting inline for its task), which outlive the request
// deadline and hold a connection, goroutines and a task subscription
// each: at most Options.MaxTaskWaits on the node, and a quarter of that (at least one) for
// one principal. The zero value is ready.
type waitSlots struct {
	mu          sync.Mutex
	used        int
	byPrincipal map[string]int
}

// acquire takes a slot for the principal who names (tenant and principal), under a
// node bound of limit, and returns its release; it reports false, taking
// nothing, when either bound is reached.
func (w *waitSlots) acquire(who string, limit int) (release func(), ok bool) {
	perPrincipal := max(1, limit/4)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.used >= limit || w.byPrincipal[who] >= perPrincipal {
		return nil, false
	}
	if w.byPrincipal == nil {
		w.byPrincipal = map[string]int{}
	}
	w.used++
	w.byPrincipal[who]++
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.used--
			if w.byPrincipal[who]--; w.byPrincipal[who] == 0 {
				delete(w.byPrincipal, who)
			}
		})
	}, true
}

// maxTaskWaits is Options.MaxTaskWaits with its default.
func (s *Server) maxTaskWaits() int {
	if n := s.opts.MaxTaskWaits; n > 0 {
		return n
	}
	return DefaultMaxTaskWaits
}
