package server

import (
	"context"
	"sync/atomic"

	"github.com/taskwire/taskwire/mcp"
)

// handlerPool bounds how many handlers run at once and how many requests may
// wait for a slot. Task operations (see taskOperation) also draw from a
// share of their own, smaller than the pool, so that a slow task store can
// never take every slot from requests that do not touch it; they wait for
// that share in a queue of their own. Requests run on their own goroutine;
// the pool only gates them, so it owns no goroutines.
type handlerPool struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64

	taskSlots   chan struct{} // the share of task operations
	taskWaiting atomic.Int64  // bounded by maxWaiting too
}

func newHandlerPool(concurrency, taskConcurrency, queue int) *handlerPool {
	return &handlerPool{
		slots:      make(chan struct{}, concurrency),
		maxWaiting: int64(queue),
		taskSlots:  make(chan struct{}, taskConcurrency),
	}
}

// acquire takes a slot; a task operation first takes a place in the task
// share, then a slot. It fails with errQueueFull at once when the queue it
// would wait in is full, and with errQueueFull when ctx ends while waiting
// (a deadline while queued is a capacity failure, not a handler timeout).
func (p *handlerPool) acquire(ctx context.Context, taskOp bool) error {
	if !taskOp {
		return take(ctx, p.slots, &p.waiting, p.maxWaiting)
	}
	if err := take(ctx, p.taskSlots, &p.taskWaiting, p.maxWaiting); err != nil {
		return err
	}
	if err := take(ctx, p.slots, &p.waiting, p.maxWaiting); err != nil {
		<-p.taskSlots
		return err
	}
	return nil
}

// release gives back what acquire took.
func (p *handlerPool) release(taskOp bool) {
	<-p.slots
	if taskOp {
		<-p.taskSlots
	}
}

// take puts a token into sem, waiting while the waiters counted in waiting
// stay within max.
func take(ctx context.Context, sem chan struct{}, waiting *atomic.Int64, max int64) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	if waiting.Add(1) > max {
		waiting.Add(-1)
		return errQueueFull
	}
	defer waiting.Add(-1)
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errQueueFull
	}
}

// taskOperation reports whether the request's handler works with the task
// store: tasks/get, tasks/update and tasks/cancel always; tools/call when
// the call may create a task.
func (c *call) taskOperation(rq *Request) bool {
	switch c.req.Method {
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		return true
	}
	return rq != nil && rq.taskCreation != nil
}
