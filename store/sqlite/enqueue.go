package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// Enqueue implements worker.Enqueuer: it creates a working task bound to
// cc.Request's endpoint, tenant and principal, with cc.Origin stored byte for
// byte, its available job (kind: the origin's tool) and an outbox row in one
// transaction, and publishes the task ID after commit. The task is readable
// through FindTask when Enqueue returns.
//
// With opts.IdempotencyKey, a task already created with the same key,
// tenant, endpoint and tool is returned unchanged, whatever its state, when
// its arguments are the same (byte for byte, or after removing
// insignificant white space); otherwise Enqueue fails with
// worker.ErrIdempotencyConflict. An expired task does not hold its key: it
// is deleted and a new task created.
//
// Zero options take the store's defaults. A negative opts.TTL means
// unlimited. TTL and PollInterval must be whole milliseconds.
func (s *Store) Enqueue(ctx context.Context, cc *task.CreationContext, opts worker.EnqueueOptions) (task.Task, error) {
	if cc == nil || cc.Origin.IsZero() || cc.Request.Endpoint == "" {
		return task.Task{}, errors.New("sqlite: a creation context with an origin and endpoint is required")
	}
	ttl, poll, maxAttempts := opts.TTL, opts.PollInterval, opts.MaxAttempts
	if ttl == 0 {
		ttl = s.opts.DefaultTTL
	}
	if ttl < 0 {
		ttl = 0
	}
	if poll == 0 {
		poll = s.opts.DefaultPollInterval
	}
	if maxAttempts == 0 {
		maxAttempts = s.opts.DefaultMaxAttempts
	}
	switch {
	case ttl%time.Millisecond != 0 || poll < 0 || poll%time.Millisecond != 0:
		return task.Task{}, errors.New("sqlite: TTL and PollInterval must be whole milliseconds")
	case maxAttempts < 0:
		return task.Task{}, errors.New("sqlite: MaxAttempts must not be negative")
	}
	var snap task.Task
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		now := s.now()
		nowMs := now.UnixMilli()
		key := opts.IdempotencyKey
		if key != "" {
			existing, err := s.idempotent(ctx, tx, cc, key, nowMs)
			if err != nil || existing != nil {
				if existing != nil {
					snap, err = existing.snapshot()
				}
				return nil, err
			}
		}
		id, err := taskdata.NewID(s.now())
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		var expires any
		if ttl > 0 {
			expires = nowMs + ttl.Milliseconds()
		}
		var keyArg any
		if key != "" {
			keyArg = key
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tasks (id, endpoint, tenant, principal, kind, status, origin,
			created_at, updated_at, expires_at, ttl_ms, poll_interval_ms, idempotency_key)
			VALUES (?, ?, ?, ?, ?, 'working', ?, ?, ?, ?, ?, ?, ?)`,
			id, cc.Request.Endpoint, cc.Request.Tenant, cc.Request.Principal, cc.Origin.Tool(),
			cc.Origin.Persisted(), nowMs, nowMs, expires, ttl.Milliseconds(), poll.Milliseconds(), keyArg)
		if err != nil {
			return nil, wrapErr("insert task", err)
		}
		runAt := nowMs
		if !opts.RunAt.IsZero() {
			runAt = opts.RunAt.UnixMilli()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (task_id, state, max_attempts, run_at, kind, created_at,
			expires_at) VALUES (?, 'available', ?, ?, ?, ?, ?)`, id, maxAttempts, runAt, cc.Origin.Tool(), nowMs,
			expires); err != nil {
			return nil, wrapErr("insert job", err)
		}
		if err := outbox(ctx, tx, id, nowMs); err != nil {
			return nil, err
		}
		snap, err = task.New(task.Params{
			ID: id, Origin: cc.Origin, Status: task.Working,
			CreatedAt: time.UnixMilli(nowMs).UTC(), LastUpdatedAt: time.UnixMilli(nowMs).UTC(),
			TTL: ttl, PollInterval: poll,
		})
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		return []string{id}, nil
	})
	if err != nil {
		return task.Task{}, err
	}
	return snap, nil
}

// idempotent returns the live task holding an idempotency key, or nil when
// there is none; an expired holder is deleted to free the key. It fails with
// worker.ErrIdempotencyConflict when the holder's arguments differ.
func (s *Store) idempotent(ctx context.Context, tx *wtx, cc *task.CreationContext, key string, nowMs int64) (*taskRow, error) {
	var id string
	var expires sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT id, expires_at FROM tasks
		WHERE tenant = ? AND endpoint = ? AND kind = ? AND idempotency_key = ?`,
		cc.Request.Tenant, cc.Request.Endpoint, cc.Origin.Tool(), key).Scan(&id, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("idempotency lookup", err)
	}
	if expires.Valid && expires.Int64 <= nowMs {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE id = ?`, id); err != nil {
			return nil, wrapErr("delete expired task", err)
		}
		return nil, nil
	}
	r, err := liveTask(ctx, tx, id, nowMs)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("sqlite: idempotency key holder %s vanished", id)
	}
	origin, err := task.ParseOrigin(r.origin)
	if err != nil {
		return nil, fmt.Errorf("sqlite: task origin: %w", err)
	}
	if !taskdata.SameArguments(origin, cc.Origin) {
		return nil, worker.ErrIdempotencyConflict
	}
	return r, nil
}
