package memory

import (
	"fmt"
	"maps"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The worker-side methods below are trusted: they perform no authorization.
// They drive the tasks Create made: unknown and expired IDs give
// task.ErrNotFound, a task Enqueue made gives ErrEnqueued (its job's lease
// drives it, see Jobs), and transitions of a terminal task give
// ErrTerminal. Each committed change is published to the manager's
// EventPublisher after the lock is released.

// Find returns the snapshot of any unexpired task, made by Create or by
// Enqueue, without authorization.
func (m *Manager) Find(id string) (task.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveLocked(id)
	if e == nil {
		return task.Task{}, task.ErrNotFound
	}
	return e.snap, nil
}

// transition computes a change of a non-terminal task under the lock: fn
// edits the snapshot's members and returns the function that applies its
// other entry changes, called only once the new snapshot is valid, so that a
// rejected change leaves no trace. A nil apply with a nil error means "no
// change". Committed changes are published after the lock is released.
func (m *Manager) transition(id string, fn func(e *entry, p *task.Params) (apply func(), err error)) (task.Task, error) {
	snap, changed, err := m.transitionLocked(id, fn)
	if err == nil && changed {
		m.publisher.Publish(id)
	}
	return snap, err
}

func (m *Manager) transitionLocked(id string, fn func(e *entry, p *task.Params) (func(), error)) (task.Task, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveLocked(id)
	if e == nil {
		return task.Task{}, false, task.ErrNotFound
	}
	if e.job != nil {
		return task.Task{}, false, ErrEnqueued
	}
	if e.snap.Status().Terminal() {
		return task.Task{}, false, ErrTerminal
	}
	p := e.snap.Params()
	apply, err := fn(e, &p)
	if err != nil {
		return task.Task{}, false, err
	}
	if apply == nil {
		return e.snap, false, nil
	}
	p.LastUpdatedAt = m.later(p.LastUpdatedAt)
	snap, err := task.New(p)
	if err != nil {
		return task.Task{}, false, err
	}
	b := e.mark()
	apply()
	e.snap = snap
	e.observe(b, m.now())
	return snap, true, nil
}

func nothing() {}

// MarkWorking moves the task to working with an optional status message. It
// supersedes any outstanding input requests: their keys stay used.
func (m *Manager) MarkWorking(id, message string) (task.Task, error) {
	return m.transition(id, func(e *entry, p *task.Params) (func(), error) {
		p.Status, p.StatusMessage, p.InputRequests = task.Working, message, nil
		return func() { e.outstanding = nil }, nil
	})
}

// ReportProgress sets a working task's status message and progress count
// (nil: none), as a durable store's backend.ProgressReporter does for a
// running job. It fails for a task that is not working.
func (m *Manager) ReportProgress(id, message string, p *task.Progress) (task.Task, error) {
	if p != nil && !p.Valid() {
		return task.Task{}, fmt.Errorf("memory: progress numbers must be finite and not negative")
	}
	return m.transition(id, func(e *entry, q *task.Params) (func(), error) {
		if q.Status != task.Working {
			return nil, fmt.Errorf("memory: progress can be reported only while the task is working")
		}
		q.StatusMessage, q.Progress = message, p
		return nothing, nil
	})
}

// RequestInput moves the task to input_required with the given requests.
// Keys must be unique for the task's lifetime (ErrKeyReused); responses
// accepted earlier must have been taken first (ErrPendingResponses).
// Requesting exactly the outstanding set again is a no-op.
func (m *Manager) RequestInput(id string, reqs mcp.InputRequests, message string) (task.Task, error) {
	if len(reqs) == 0 {
		return task.Task{}, fmt.Errorf("memory: at least one input request is required")
	}
	for k, r := range reqs {
		if k == "" || r == nil || r.Method == "" {
			return task.Task{}, fmt.Errorf("memory: input requests need a key and a method")
		}
	}
	return m.transition(id, func(e *entry, p *task.Params) (func(), error) {
		if len(e.responses) > 0 {
			return nil, ErrPendingResponses
		}
		if sameRequests(e.outstanding, reqs) {
			if p.StatusMessage == message {
				return nil, nil // already outstanding: no change
			}
			p.StatusMessage = message
			return nothing, nil
		}
		for k := range reqs {
			if e.used[k] {
				return nil, fmt.Errorf("%w: %q", ErrKeyReused, k)
			}
		}
		p.Status, p.StatusMessage, p.InputRequests = task.InputRequired, message, maps.Clone(reqs)
		return func() {
			for k := range reqs {
				e.used[k] = true
			}
			e.outstanding = maps.Clone(reqs)
		}, nil
	})
}

func sameRequests(a, b mcp.InputRequests) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for k, r := range a {
		o, ok := b[k]
		if !ok || o == nil || r.Method != o.Method || string(r.Params) != string(o.Params) {
			return false
		}
	}
	return true
}

// TakeInputResponses returns the accepted responses and forgets them; a
// second call returns none until more are accepted.
func (m *Manager) TakeInputResponses(id string) (mcp.InputResponses, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveLocked(id)
	if e == nil {
		return nil, task.ErrNotFound
	}
	if e.job != nil {
		return nil, ErrEnqueued
	}
	r := e.responses
	e.responses = nil
	return r, nil
}

// Complete ends the task with a result. A result with isError true still
// completes it. Validate results with task.ValidateResult before calling.
func (m *Manager) Complete(id string, res *mcp.CallToolResult, message string) (task.Task, error) {
	if res == nil {
		return task.Task{}, fmt.Errorf("memory: a result is required")
	}
	return m.transition(id, func(e *entry, p *task.Params) (func(), error) {
		p.Status, p.StatusMessage, p.InputRequests, p.Result = task.Completed, message, nil, res
		return func() { e.outstanding = nil }, nil
	})
}

// Fail ends the task with a client-safe JSON-RPC error.
func (m *Manager) Fail(id string, rpcErr *mcp.Error, message string) (task.Task, error) {
	if rpcErr == nil {
		return task.Task{}, fmt.Errorf("memory: an error is required")
	}
	return m.transition(id, func(e *entry, p *task.Params) (func(), error) {
		p.Status, p.StatusMessage, p.InputRequests, p.Error = task.Failed, message, nil, rpcErr
		return func() { e.outstanding = nil }, nil
	})
}

// Cancel ends the task as cancelled.
func (m *Manager) Cancel(id, message string) (task.Task, error) {
	return m.transition(id, func(e *entry, p *task.Params) (func(), error) {
		p.Status, p.StatusMessage, p.InputRequests = task.Cancelled, message, nil
		return func() { e.outstanding = nil }, nil
	})
}

// CancelRequested reports whether a client asked to cancel the task, made
// by Create or by Enqueue.
func (m *Manager) CancelRequested(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveLocked(id)
	if e == nil {
		return false, task.ErrNotFound
	}
	return e.cancelRequested, nil
}
