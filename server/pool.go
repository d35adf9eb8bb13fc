package server

import (
	"context"
	"sync/atomic"
)

// handlerPool bounds how many handlers run at once and how many requests may
// wait for a slot. Requests run on their own goroutine; the pool only gates
// them, so it owns no goroutines.
type handlerPool struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
}

func newHandlerPool(concurrency, queue int) *handlerPool {
	return &handlerPool{slots: make(chan struct{}, concurrency), maxWaiting: int64(queue)}
}

// acquire takes a slot. It fails with errQueueFull at once when the queue is
// full, and with errQueueFull when ctx ends while waiting (a deadline while
// queued is a capacity failure, not a handler timeout).
func (p *handlerPool) acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	if p.waiting.Add(1) > p.maxWaiting {
		p.waiting.Add(-1)
		return errQueueFull
	}
	defer p.waiting.Add(-1)
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errQueueFull
	}
}

func (p *handlerPool) release() { <-p.slots }
