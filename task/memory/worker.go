package memory

import (
	"fmt"
	"maps"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The worker-side methods below are trusted: they perform no authorization.
// Unknown and expired IDs give task.ErrNotFound; transitions of a terminal
// task give ErrTerminal. Each committed change is published to the
// manager's EventPublisher after the lock is released.

// Find returns the task's snapshot without authorization.
func (m *Manager) Find(id string) (task.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.now())
	e, ok := m.tasks[id]
	if !ok {
		return task.Task{}, task.ErrNotFound
	}
	return e.snap, nil
}

// transition applies fn to a non-terminal task under the lock, then stores
// the snapshot fn returns and publishes the change.
func (m *Manager) transition(id string, fn func(e *entry, p *task.Params) error) (task.Task, error) {
	m.mu.Lock()
	m.expireLocked(m.now())
	e, ok := m.tasks[id]
	if !ok {
		m.mu.Unlock()
		return task.Task{}, task.ErrNotFound
	}
	if e.snap.Status().Terminal() {
		m.mu.Unlock()
		return task.Task{}, ErrTerminal
	}
	p := e.snap.Params()
	if err := fn(e, &p); err != nil {
		m.mu.Unlock()
		return task.Task{}, err
	}
	p.LastUpdatedAt = m.later(p.LastUpdatedAt)
	snap, err := task.New(p)
	if err != nil {
		m.mu.Unlock()
		return task.Task{}, err
	}
	e.snap = snap
	m.mu.Unlock()
	m.publisher.Publish(id)
	return snap, nil
}

// MarkWorking moves the task to working with an optional status message. It
// supersedes any outstanding input requests: their keys stay used.
func (m *Manager) MarkWorking(id, message string) (task.Task, error) {
	return m.transition(id, func(e *entry, p *task.Params) error {
		e.outstanding = nil
		p.Status, p.StatusMessage, p.InputRequests = task.Working, message, nil
		return nil
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
	return m.transition(id, func(e *entry, p *task.Params) error {
		if len(e.responses) > 0 {
			return ErrPendingResponses
		}
		if sameRequests(e.outstanding, reqs) {
			p.StatusMessage = message
			return nil
		}
		for k := range reqs {
			if e.used[k] {
				return fmt.Errorf("%w: %q", ErrKeyReused, k)
			}
		}
		for k := range reqs {
			e.used[k] = true
		}
		e.outstanding = maps.Clone(reqs)
		p.Status, p.StatusMessage, p.InputRequests = task.InputRequired, message, maps.Clone(reqs)
		return nil
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
	m.expireLocked(m.now())
	e, ok := m.tasks[id]
	if !ok {
		return nil, task.ErrNotFound
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
	return m.transition(id, func(e *entry, p *task.Params) error {
		e.outstanding = nil
		p.Status, p.StatusMessage, p.InputRequests, p.Result = task.Completed, message, nil, res
		return nil
	})
}

// Fail ends the task with a client-safe JSON-RPC error.
func (m *Manager) Fail(id string, rpcErr *mcp.Error, message string) (task.Task, error) {
	if rpcErr == nil {
		return task.Task{}, fmt.Errorf("memory: an error is required")
	}
	return m.transition(id, func(e *entry, p *task.Params) error {
		e.outstanding = nil
		p.Status, p.StatusMessage, p.InputRequests, p.Error = task.Failed, message, nil, rpcErr
		return nil
	})
}

// Cancel ends the task as cancelled.
func (m *Manager) Cancel(id, message string) (task.Task, error) {
	return m.transition(id, func(e *entry, p *task.Params) error {
		e.outstanding = nil
		p.Status, p.StatusMessage, p.InputRequests = task.Cancelled, message, nil
		return nil
	})
}

// CancelRequested reports whether a client asked to cancel the task.
func (m *Manager) CancelRequested(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.now())
	e, ok := m.tasks[id]
	if !ok {
		return false, task.ErrNotFound
	}
	return e.cancelRequested, nil
}
