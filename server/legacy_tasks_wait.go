package server

import (
	"context"
	"errors"
	"time"

	"github.com/taskwire/taskwire/task"
)

// Waiting for a task (tasks/result and waiting inline) reads the task when
// the manager hints at a change and, because hints may be lost, at least
// every poll interval: the task's suggested interval, kept within
// [minTaskPoll, maxTaskPoll]. A manager without an EventPublisher is polled
// only.
const (
	minTaskPoll = 100 * time.Millisecond
	maxTaskPoll = 2 * time.Second
)

// taskWatch delivers the hints for one task. Its owner is the request that
// waits; stop must be called when the wait ends.
type taskWatch struct {
	wake chan struct{} // buffered 1: a pending hint is never lost, extra ones merge
	stop func()
}

// watchTask subscribes to the manager's hints for id. The subscriber never
// blocks: a hint is merged into a pending one.
func (s *Server) watchTask(id string) *taskWatch {
	w := &taskWatch{wake: make(chan struct{}, 1), stop: func() {}}
	if s.opts.TaskManager == nil {
		return w
	}
	if pub := s.opts.TaskManager.EventPublisher(); pub != nil {
		w.stop = pub.Subscribe(func(hinted string) {
			if hinted != id {
				return
			}
			select {
			case w.wake <- struct{}{}:
			default:
			}
		})
	}
	return w
}

// pollInterval is the fallback interval for a task.
func pollInterval(t task.Task) time.Duration {
	return min(max(t.PollInterval(), minTaskPoll), maxTaskPoll)
}

// errWaitEnded is returned by awaitTask when ctx ends before the task is
// done; the caller tells a deadline from a client that left.
var errWaitEnded = errors.New("the wait for the task ended")

// awaitTask reads the task named by rc whenever it may have changed and
// passes each snapshot to step, until step reports done, step fails, the
// task disappears (task.ErrNotFound) or ctx ends (errWaitEnded). Each read
// is bounded by readTimeout. The first read happens at once; the watch
// must have been started before it, so that no change is missed.
func (c *call) awaitTask(ctx context.Context, w *taskWatch, rc task.RequestContext, readTimeout time.Duration, step func(task.Task) (bool, error)) (task.Task, error) {
	timer := time.NewTimer(maxTaskPoll)
	defer timer.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, readTimeout)
		t, found, err := c.srv.opts.TaskManager.FindTask(rctx, rc)
		cancel()
		switch {
		case ctx.Err() != nil:
			return task.Task{}, errWaitEnded
		case err != nil:
			return task.Task{}, err
		case !found || t.ID() != rc.TaskID:
			return task.Task{}, task.ErrNotFound
		}
		done, err := step(t)
		if done || err != nil {
			return t, err
		}
		timer.Reset(pollInterval(t)) // since Go 1.23 no stale tick survives Reset
		select {
		case <-ctx.Done():
			return t, errWaitEnded
		case <-w.wake:
		case <-timer.C:
		}
	}
}
