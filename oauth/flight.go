package oauth

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Errors of flights.do.
var (
	errBusy   = errors.New("oauth: too many requests to the authorization server in flight")
	errClosed = errors.New("oauth: the resource server is closed")
)

// owner owns the resource server's background requests: each one ends
// within the fetch timeout, and close ends them all at once and waits.
type owner struct {
	ctx    context.Context // cancelled by close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newOwner() *owner {
	ctx, cancel := context.WithCancel(context.Background())
	return &owner{ctx: ctx, cancel: cancel}
}

// start runs fn in a goroutine the owner waits for, unless it is closed.
func (o *owner) start(fn func(ctx context.Context)) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.wg.Go(func() { fn(o.ctx) })
	return true
}

// isClosed reports whether close was called.
func (o *owner) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// close cancels the running goroutines, waits for them, and starts no more.
func (o *owner) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
}

// flights runs at most one request per key at a time, and at most max
// keys at once, in goroutines of an owner, each bounded by timeout; any
// number of callers wait for a request's result.
type flights[K comparable, V any] struct {
	owner   *owner
	max     int
	timeout time.Duration

	mu sync.Mutex
	m  map[K]*flight[V]
}

// flight is one request; done is closed once val and err are set.
type flight[V any] struct {
	done chan struct{}
	val  V
	err  error
}

func newFlights[K comparable, V any](o *owner, max int, timeout time.Duration) *flights[K, V] {
	return &flights[K, V]{owner: o, max: max, timeout: timeout, m: make(map[K]*flight[V])}
}

// do returns the request in flight for key, or starts fn as a new one if
// may (nil: always) allows; may runs under the lock, so that its decision
// and the start are one step. It returns nil and no error when may
// refused, errBusy when max requests are in flight, errClosed after the
// owner closed.
func (g *flights[K, V]) do(key K, may func() bool, fn func(ctx context.Context) (V, error)) (*flight[V], error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.m[key]; ok {
		return f, nil
	}
	if g.owner.isClosed() {
		return nil, errClosed
	}
	if len(g.m) >= g.max {
		return nil, errBusy
	}
	if may != nil && !may() {
		return nil, nil
	}
	f := &flight[V]{done: make(chan struct{})}
	started := g.owner.start(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		v, err := fn(ctx)
		g.mu.Lock()
		delete(g.m, key)
		g.mu.Unlock()
		f.val, f.err = v, err
		close(f.done)
	})
	if !started {
		return nil, errClosed
	}
	g.m[key] = f
	return f, nil
}

// wait returns the flight's result, or ctx's error if ctx ends first.
func (f *flight[V]) wait(ctx context.Context) (V, error) {
	select {
	case <-f.done:
		return f.val, f.err
	default:
	}
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}
