package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// Enqueue implements backend.Enqueuer: it creates a working task bound to
// cc.Request's endpoint, tenant and principal, with cc.Origin stored byte for
// byte, its available job (kind: the origin's tool) and an outbox row in one
// transaction, and publishes the task ID after commit. The task is readable
// through FindTask when Enqueue returns.
//
// With opts.IdempotencyKey, a task already created with the same key,
// tenant, endpoint and tool is returned unchanged, whatever its state, when
// its arguments are the same (byte for byte, or after removing
// insignificant white space); otherwise Enqueue fails with
// backend.ErrIdempotencyConflict. An expired task does not hold its key: it
// is deleted and a new task created.
//
// Zero options take the store's defaults. A negative opts.TTL means
// unlimited. TTL and PollInterval must be whole milliseconds.
func (s *Store) Enqueue(ctx context.Context, cc *task.CreationContext, opts backend.EnqueueOptions) (task.Task, error) {
	e, err := storerules.ResolveEnqueue(cc, opts, s.enqueueDefaults())
	if err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	var snap task.Task
	err = s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		if key := opts.IdempotencyKey; key != "" {
			existing, err := s.idempotent(ctx, tx, cc, key, nowMs)
			if err != nil || !existing.IsZero() {
				snap = existing
				return nil, err
			}
		}
		var err error
		snap, err = s.insertTask(ctx, tx, cc, e, opts, nowMs)
		if err != nil {
			return nil, err
		}
		return []string{snap.ID()}, nil
	})
	if err != nil {
		return task.Task{}, err
	}
	return snap, nil
}

// EnqueueBatch implements backend.BatchEnqueuer: every task, job and outbox
// row is inserted in one transaction on the writer, and the task IDs are
// published after commit. Each item is checked as Enqueue checks it; an
// invalid item fails the whole batch before anything is written.
func (s *Store) EnqueueBatch(ctx context.Context, items []backend.BatchItem) ([]task.Task, error) {
	resolved, err := storerules.ResolveBatch(items, s.enqueueDefaults())
	if err != nil || len(items) == 0 {
		return nil, wrapErr("enqueue batch", err)
	}
	var snaps []task.Task
	err = s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		snaps = make([]task.Task, len(items))
		ids := make([]string, len(items))
		for i, it := range items {
			snap, err := s.insertTask(ctx, tx, it.Creation, resolved[i], it.Options, nowMs)
			if err != nil {
				return nil, err
			}
			snaps[i], ids[i] = snap, snap.ID()
		}
		return ids, nil
	})
	if err != nil {
		return nil, err
	}
	return snaps, nil
}

// enqueueDefaults are the store's defaults for EnqueueOptions.
func (s *Store) enqueueDefaults() storerules.EnqueueDefaults {
	return storerules.EnqueueDefaults{TTL: s.opts.DefaultTTL, PollInterval: s.opts.DefaultPollInterval,
		MaxAttempts: s.opts.DefaultMaxAttempts}
}

// insertTask inserts a working task, its available job and an outbox row in
// tx, and returns the task's snapshot.
func (s *Store) insertTask(ctx context.Context, tx *wtx, cc *task.CreationContext, e storerules.Enqueue,
	opts backend.EnqueueOptions, nowMs int64) (task.Task, error) {
	id, err := taskdata.NewID(s.now())
	if err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	var expires, keyArg any
	if e.TTL > 0 {
		expires = nowMs + e.TTL.Milliseconds()
	}
	if opts.IdempotencyKey != "" {
		keyArg = opts.IdempotencyKey
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO tasks (id, endpoint, tenant, principal, kind, status, origin,
		created_at, updated_at, expires_at, ttl_ms, poll_interval_ms, idempotency_key, trace_context, queue, priority)
		VALUES (?, ?, ?, ?, ?, 'working', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, cc.Request.Endpoint, cc.Request.Tenant, cc.Request.Principal, cc.Origin.Tool(),
		cc.Origin.Persisted(), nowMs, nowMs, expires, e.TTL.Milliseconds(), e.PollInterval.Milliseconds(), keyArg,
		taskdata.TraceColumn(cc), e.Queue, e.Priority)
	if err != nil {
		return task.Task{}, wrapErr("insert task", err)
	}
	runAt := nowMs
	if !opts.RunAt.IsZero() {
		runAt = opts.RunAt.UnixMilli()
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (task_id, state, max_attempts, run_at, kind, created_at,
		expires_at, queue, priority) VALUES (?, 'available', ?, ?, ?, ?, ?, ?, ?)`, id, e.MaxAttempts, runAt,
		cc.Origin.Tool(), nowMs, expires, e.Queue, e.Priority); err != nil {
		return task.Task{}, wrapErr("insert job", err)
	}
	if err := outbox(ctx, tx, id, nowMs); err != nil {
		return task.Task{}, err
	}
	snap, err := e.Created(id, cc.Origin, time.UnixMilli(nowMs))
	if err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	return snap, nil
}

// idempotent returns the live task holding an idempotency key, or the zero
// Task when there is none; an expired holder is deleted to free the key. It fails with
// backend.ErrIdempotencyConflict when the holder's arguments differ.
func (s *Store) idempotent(ctx context.Context, tx *wtx, cc *task.CreationContext, key string, nowMs int64) (task.Task, error) {
	var id string
	var expires sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT id, expires_at FROM tasks
		WHERE tenant = ? AND endpoint = ? AND kind = ? AND idempotency_key = ?`,
		cc.Request.Tenant, cc.Request.Endpoint, cc.Origin.Tool(), key).Scan(&id, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return task.Task{}, nil
	}
	if err != nil {
		return task.Task{}, wrapErr("idempotency lookup", err)
	}
	if expires.Valid && expires.Int64 <= nowMs {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE id = ?`, id); err != nil {
			return task.Task{}, wrapErr("delete expired task", err)
		}
		return task.Task{}, nil
	}
	r, err := liveTask(ctx, tx, id, nowMs)
	if err != nil {
		return task.Task{}, err
	}
	if r == nil {
		return task.Task{}, errors.New("sqlite: the idempotency key's holder vanished")
	}
	holder, err := r.snapshot()
	if err != nil {
		return task.Task{}, err
	}
	if !storerules.SameArguments(holder.Origin(), cc.Origin) {
		return task.Task{}, backend.ErrIdempotencyConflict
	}
	return holder, nil
}
