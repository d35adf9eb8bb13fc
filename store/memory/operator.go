package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

var _ backend.OperatorSource = (*Manager)(nil)

// Operator returns the manager's backend.Operator, for package console: it
// reads and acts on every tenant's tasks, bypassing the authorization
// binding of task.Manager, so it must only be reachable behind operator
// authentication. It is kept off *Manager so that an application's handle
// shows only what the application uses. It is valid until Close.
func (m *Manager) Operator() backend.Operator { return operator{m} }

// operator is the Manager's operator side (see Operator).
type operator struct{ m *Manager }

// summary is what an operator listing shows of e.
func (e *entry) summary() backend.TaskSummary {
	s := e.snap
	tool := s.Origin().Tool()
	if e.job != nil {
		tool = e.job.kind
	}
	return backend.TaskSummary{ID: s.ID(), Tool: tool, Endpoint: e.endpoint, Tenant: e.tenant, Status: s.Status(),
		StatusMessage: s.StatusMessage(), CreatedAt: s.CreatedAt().UTC(), UpdatedAt: s.LastUpdatedAt().UTC(),
		ExpiresAt: e.expires.UTC()}
}

// matches reports whether e passes q's filters.
func (e *entry) matches(q backend.OperatorQuery) bool {
	s := e.summary()
	return (q.Status == "" || s.Status == q.Status) && (q.Tool == "" || s.Tool == q.Tool) &&
		(q.Tenant == "" || s.Tenant == q.Tenant) &&
		(q.CreatedFrom.IsZero() || !s.CreatedAt.Before(q.CreatedFrom)) &&
		(q.CreatedBefore.IsZero() || s.CreatedAt.Before(q.CreatedBefore))
}

// Tasks implements backend.Operator. It costs O(n log n) in the
// tasks held.
func (o operator) Tasks(ctx context.Context, q backend.OperatorQuery) (backend.OperatorPage, error) {
	m := o.m
	if err := storerules.CheckOperatorQuery(q); err != nil {
		return backend.OperatorPage{}, fmt.Errorf("memory: %w", err)
	}
	scope := storerules.OperatorCursorScope(q)
	var after *listcursor.Position
	if q.Cursor != "" {
		p, err := m.cursors.Decode(scope, q.Cursor)
		if err != nil {
			return backend.OperatorPage{}, err
		}
		after = &p
	}
	if err := ctx.Err(); err != nil {
		return backend.OperatorPage{}, err
	}
	limit := storerules.OperatorLimit(q.Limit)
	m.mu.Lock()
	now := m.now()
	var tasks []backend.TaskSummary
	for _, e := range m.tasks {
		if e.expired(now) || !e.matches(q) ||
			(after != nil && compareTasks(e.snap, after.At, after.ID) <= 0) {
			continue
		}
		tasks = append(tasks, e.summary())
	}
	m.mu.Unlock()
	slices.SortFunc(tasks, func(a, b backend.TaskSummary) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	page, err := storerules.OperatorPage(m.cursors, q, tasks, limit, time.Time.UnixNano)
	if err != nil {
		return backend.OperatorPage{}, fmt.Errorf("memory: %w", err)
	}
	return page, nil
}

// Counts implements backend.Operator.
func (o operator) Counts(ctx context.Context) ([]backend.TaskCount, error) {
	m := o.m
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type key struct {
		tool   string
		status task.Status
	}
	counts := map[key]int64{}
	m.mu.Lock()
	for _, e := range m.tasks { // expired tasks count until they are deleted, as on the durable stores
		s := e.summary()
		counts[key{s.Tool, s.Status}]++
	}
	m.mu.Unlock()
	out := make([]backend.TaskCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, backend.TaskCount{Tool: k.tool, Status: k.status, N: n})
	}
	slices.SortFunc(out, func(a, b backend.TaskCount) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Status, b.Status))
	})
	return out, nil
}

// Task implements backend.Operator.
func (o operator) Task(ctx context.Context, id string) (backend.OperatorTask, error) {
	m := o.m
	if err := ctx.Err(); err != nil {
		return backend.OperatorTask{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveLocked(id)
	if e == nil {
		return backend.OperatorTask{}, task.ErrNotFound
	}
	s := e.snap
	ot := backend.OperatorTask{TaskSummary: e.summary(), Arguments: s.Origin().Params().Arguments,
		Result: s.Result(), Error: s.Error(), CancelRequested: e.cancelRequested,
		Events: slices.Clone(e.events)}
	if p, ok := s.Progress(); ok {
		ot.Progress = &p
	}
	if j := e.job; j != nil {
		ot.Job = &backend.JobInfo{State: string(j.state), Attempt: j.attempt, Failures: j.failures,
			MaxAttempts: j.maxAttempts, InterruptedRuns: j.interrupted, InputRounds: j.inputRounds, RunAt: j.runAt.UTC(), Worker: j.worker,
			LeaseExpires: j.leaseExpires.UTC(), CheckpointBytes: len(j.checkpoint)}
		if len(j.checkpoint) > 0 {
			ot.Job.CheckpointAt = j.checkpointAt.UTC()
		}
	}
	return ot, nil
}

// Activity implements backend.Operator from the tasks' histories.
func (o operator) Activity(ctx context.Context, since time.Time) ([]backend.ActivityBucket, error) {
	m := o.m
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var acc storerules.Activity
	m.mu.Lock()
	now := m.now()
	since = storerules.ActivitySince(now, since)
	for _, e := range m.tasks { // expired tasks count until they are deleted, as on the durable stores
		for _, ev := range e.events {
			switch ev.Kind {
			case backend.EventCompleted, backend.EventFailed, backend.EventCancelled:
				if !ev.At.Before(since) && !ev.At.After(now) {
					acc.Add(ev.At, ev.Kind, 1)
				}
			}
		}
	}
	m.mu.Unlock()
	return acc.Buckets(), nil
}

// Cancel implements backend.Operator through RequestCancel, with
// the task's own binding.
func (o operator) Cancel(ctx context.Context, id string) error {
	m := o.m
	m.mu.Lock()
	e := m.liveLocked(id)
	var rc task.RequestContext
	if e != nil {
		rc = task.RequestContext{TaskID: id, Endpoint: e.endpoint, Tenant: e.tenant, Principal: e.principal}
	}
	m.mu.Unlock()
	if e == nil {
		return task.ErrNotFound
	}
	return m.RequestCancel(ctx, rc)
}

// Retry implements backend.Operator. The new task is enqueued
// (it has a job) even when the failed one was made by Create.
func (o operator) Retry(ctx context.Context, id string) (task.Task, error) {
	m := o.m
	if err := ctx.Err(); err != nil {
		return task.Task{}, err
	}
	id2, err := newID()
	if err != nil {
		return task.Task{}, err
	}
	m.mu.Lock()
	e := m.liveLocked(id)
	if e == nil {
		m.mu.Unlock()
		return task.Task{}, task.ErrNotFound
	}
	if e.snap.Status() != task.Failed {
		m.mu.Unlock()
		return task.Task{}, backend.ErrNotFailed
	}
	cc := &task.CreationContext{Origin: e.snap.Origin(),
		Request: task.RequestContext{Endpoint: e.endpoint, Tenant: e.tenant, Principal: e.principal}}
	s, err := storerules.ResolveEnqueue(cc, storerules.RetryOptions(e.snap.TTL(), e.snap.PollInterval(), e.queue, e.priority),
		m.enqueueDefaults())
	now := m.now()
	if err == nil {
		err = m.makeRoomLocked(now, 1)
	}
	var snap task.Task
	if err == nil {
		snap, err = m.insertLocked(id2, cc, s, time.Time{}, idemKey{}, now)
	}
	if err == nil {
		e.record(backend.TaskEvent{At: now, Kind: backend.EventRetried, Message: id2})
	}
	m.mu.Unlock()
	if err != nil {
		return task.Task{}, fmt.Errorf("memory: %w", err)
	}
	m.publisher.Publish(id2)
	m.publisher.Publish(id)
	return snap, nil
}

// Delete implements backend.Operator.
func (o operator) Delete(ctx context.Context, id string) error {
	m := o.m
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	e := m.liveLocked(id)
	switch {
	case e == nil:
		m.mu.Unlock()
		return task.ErrNotFound
	case !e.snap.Status().Terminal():
		m.mu.Unlock()
		return backend.ErrNotFinished
	}
	m.deleteLocked(id)
	m.mu.Unlock()
	m.publisher.Publish(id)
	return nil
}
