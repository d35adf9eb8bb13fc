package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// CloseGrace is how long Server.Close waits, once it has canceled them, for
// the goroutines it owns that run application callbacks (task lookups, the
// catalog policy and result sanitizer, the subscription authorizer) or
// released 2025-era calls to return. CloseContext takes the bound from
// its context instead.
const CloseGrace = 5 * time.Second

// ErrStillRunning is wrapped by the error of Server.Close and
// CloseContext, and logged by a 2025-era session's DELETE, when
// goroutines whose callbacks ignore their canceled context were still
// running at the end of the wait. Those goroutines end when their
// callbacks return; nothing else of the server waits for them.
var ErrStillRunning = errors.New("goroutines still running")

// joinGroup counts the goroutines of one owner by what they run, so that
// the owner's close can cancel them, wait for them within a bound and say
// what still runs. The zero value is ready.
type joinGroup struct {
	mu      sync.Mutex
	closed  bool
	running map[string]int
	cancels map[*joinToken]func()
	idle    chan struct{} // closed when running empties; nil unless waited for
}

// joinToken identifies one counted goroutine.
type joinToken struct{ kind string }

// start counts a goroutine running kind, to be canceled by close when
// cancel is not nil. It returns false once the group is closed; the
// caller then must not start the goroutine. Otherwise done must be called
// exactly once, when the goroutine ends.
func (g *joinGroup) start(kind string, cancel func()) (done func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, false
	}
	if g.running == nil {
		g.running = map[string]int{}
		g.cancels = map[*joinToken]func(){}
	}
	g.running[kind]++
	t := &joinToken{kind: kind}
	if cancel != nil {
		g.cancels[t] = cancel
	}
	return func() { g.end(t) }, true
}

func (g *joinGroup) end(t *joinToken) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.cancels, t)
	if g.running[t.kind]--; g.running[t.kind] == 0 {
		delete(g.running, t.kind)
	}
	if len(g.running) == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// close refuses later starts and cancels the running goroutines that
// registered a cancel function.
func (g *joinGroup) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
}

// cancel cancels the running goroutines that registered a cancel
// function; later starts are still counted.
func (g *joinGroup) cancel() {
	g.mu.Lock()
	cancels := slices.Collect(maps.Values(g.cancels))
	g.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// wait returns nil once no counted goroutine runs, or, when ctx ends
// first, an error wrapping ErrStillRunning that counts the goroutines
// still running by kind.
func (g *joinGroup) wait(ctx context.Context) error {
	g.mu.Lock()
	if len(g.running) == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.running) == 0 {
		return nil
	}
	kinds := slices.Sorted(maps.Keys(g.running))
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", g.running[k], k)
	}
	return fmt.Errorf("%w: %s", ErrStillRunning, strings.Join(parts, ", "))
}
