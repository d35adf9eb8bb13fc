package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// idemKey is where an idempotency key applies: per tenant, endpoint and
// tool.
type idemKey struct{ tenant, endpoint, tool, key string }

// Enqueue implements backend.Enqueuer: it creates a working task bound to
// cc.Request's endpoint, tenant and principal, with cc.Origin unchanged, and
// its available job (kind: the origin's tool, due at opts.RunAt or now), and
// publishes the task ID once the task is readable.
//
// With opts.IdempotencyKey, a task already created with the same key,
// tenant, endpoint and tool is returned as it is now, whatever its state,
// when its arguments are the same (byte for byte, or after removing
// insignificant white space); otherwise Enqueue fails with
// backend.ErrIdempotencyConflict. An expired task does not hold its key: it
// is deleted and a new task created.
//
// Zero options take the defaults: Options.TTL and Options.PollInterval, and
// backend.DefaultMaxAttempts. A negative opts.TTL means unlimited; TTL and
// PollInterval must be whole milliseconds, and MaxAttempts within
// [0, backend.MaxMaxAttempts]. Text the stores keep must be valid UTF-8
// without NUL bytes (backend.ErrInvalidText). These are the durable
// stores' rules, refused with the same errors before anything is created.
// At capacity it fails with ErrFull.
func (m *Manager) Enqueue(ctx context.Context, cc *task.CreationContext, opts backend.EnqueueOptions) (task.Task, error) {
	if err := ctx.Err(); err != nil {
		return task.Task{}, err
	}
	spec, err := storerules.ResolveEnqueue(cc, opts, m.enqueueDefaults())
	if err != nil {
		return task.Task{}, fmt.Errorf("memory: %w", err)
	}
	id, err := newID()
	if err != nil {
		return task.Task{}, err
	}
	m.mu.Lock()
	now := m.now()
	var key idemKey
	if opts.IdempotencyKey != "" {
		key = idemKey{cc.Request.Tenant, cc.Request.Endpoint, cc.Origin.Tool(), opts.IdempotencyKey}
		if existing, err := m.idempotentLocked(key, cc, now); existing != nil || err != nil {
			m.mu.Unlock()
			if err != nil {
				return task.Task{}, err
			}
			return existing.snap, nil
		}
	}
	if err := m.makeRoomLocked(now, 1); err != nil {
		m.mu.Unlock()
		return task.Task{}, err
	}
	snap, err := m.insertLocked(id, cc, spec, opts.RunAt, key, now)
	m.mu.Unlock()
	if err != nil {
		return task.Task{}, err
	}
	m.publisher.Publish(id)
	return snap, nil
}

// idempotentLocked returns the live task holding key, or nil when there is
// none; an expired holder is deleted to free the key. It fails with
// backend.ErrIdempotencyConflict when the holder's arguments differ.
func (m *Manager) idempotentLocked(key idemKey, cc *task.CreationContext, now time.Time) (*entry, error) {
	id, ok := m.keys[key]
	if !ok {
		return nil, nil
	}
	e := m.tasks[id]
	if e.expired(now) {
		m.deleteLocked(id)
		return nil, nil
	}
	if !storerules.SameArguments(e.snap.Origin(), cc.Origin) {
		return nil, backend.ErrIdempotencyConflict
	}
	return e, nil
}

// EnqueueBatch implements backend.BatchEnqueuer: every item is created as
// Enqueue creates it, under one lock, and the task IDs are published once
// all are readable. An invalid item, an item with an idempotency key
// (backend.ErrBatchIdempotencyKey), more than backend.MaxEnqueueBatch items
// or too little room (ErrFull) fail the whole batch before anything is
// created.
func (m *Manager) EnqueueBatch(ctx context.Context, items []backend.BatchItem) ([]task.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	specs, err := storerules.ResolveBatch(items, m.enqueueDefaults())
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	ids := make([]string, len(items))
	for i := range ids {
		if ids[i], err = newID(); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	now := m.now()
	if err := m.makeRoomLocked(now, len(items)); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	snaps := make([]task.Task, len(items))
	for i, it := range items {
		snap, err := m.insertLocked(ids[i], it.Creation, specs[i], it.Options.RunAt, idemKey{}, now)
		if err != nil {
			for _, id := range ids[:i] {
				m.deleteLocked(id)
			}
			m.mu.Unlock()
			return nil, err
		}
		snaps[i] = snap
	}
	m.mu.Unlock()
	for _, id := range ids {
		m.publisher.Publish(id)
	}
	return snaps, nil
}

// enqueueDefaults are the manager's defaults for EnqueueOptions.
func (m *Manager) enqueueDefaults() storerules.EnqueueDefaults {
	return storerules.EnqueueDefaults{TTL: m.opts.TTL, PollInterval: m.opts.PollInterval,
		MaxAttempts: backend.DefaultMaxAttempts}
}

// insertLocked adds a working task with its available job, which is due at
// runAt (zero: now).
func (m *Manager) insertLocked(id string, cc *task.CreationContext, s storerules.Enqueue, runAt time.Time, key idemKey,
	now time.Time) (task.Task, error) {
	snap, err := s.Created(id, cc.Origin, now)
	if err != nil {
		return task.Task{}, fmt.Errorf("memory: %w", err)
	}
	e := &entry{
		snap: snap, endpoint: cc.Request.Endpoint, tenant: cc.Request.Tenant, principal: cc.Request.Principal,
		key: key, used: map[string]bool{}, queue: s.Queue, priority: s.Priority,
		job: &job{state: jobAvailable, kind: cc.Origin.Tool(), queue: s.Queue, priority: s.Priority,
			maxAttempts: s.MaxAttempts, runAt: now,
			trace: task.DecodeTraceContext(cc.Trace.Encode())},
	}
	if s.TTL > 0 {
		e.expires = now.Add(s.TTL)
	}
	if !runAt.IsZero() {
		e.job.runAt = runAt
	}
	e.record(backend.TaskEvent{At: now, Kind: backend.EventCreated})
	m.tasks[id] = e
	if key != (idemKey{}) {
		m.keys[key] = id
	}
	return snap, nil
}
