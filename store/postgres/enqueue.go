package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// maxIdempotencyRounds bounds the lookup-then-insert rounds of an idempotent
// Enqueue that keeps losing races for its key.
const maxIdempotencyRounds = 5

// Enqueue implements backend.Enqueuer: it creates a working task bound to
// cc.Request's endpoint, tenant and principal, with cc.Origin stored byte for
// byte, and its available job (kind: the origin's tool) in one statement,
// and publishes the task ID after commit (a creation has no outbox row: see
// the package doc's Events). The task is readable
// through FindTask when Enqueue returns.
//
// With opts.IdempotencyKey, a task already created with the same key,
// tenant, endpoint and tool is returned unchanged, whatever its state, when
// its arguments are the same (byte for byte, or after removing
// insignificant white space); otherwise Enqueue fails with
// backend.ErrIdempotencyConflict. An expired task does not hold its key: it
// is deleted and a new task created. Concurrent Enqueues with one key
// create one task.
//
// Zero options take the store's defaults. A negative opts.TTL means
// unlimited. TTL and PollInterval must be whole milliseconds.
func (s *Store) Enqueue(ctx context.Context, cc *task.CreationContext, opts backend.EnqueueOptions) (task.Task, error) {
	e, err := storerules.ResolveEnqueue(cc, opts, s.enqueueDefaults())
	if err != nil {
		return task.Task{}, fmt.Errorf("postgres: %w", err)
	}
	id, err := taskdata.NewID(s.clock())
	if err != nil {
		return task.Task{}, fmt.Errorf("postgres: %w", err)
	}
	ins := insertion{cc: cc, id: id, e: e, key: opts.IdempotencyKey}
	if !opts.RunAt.IsZero() {
		ins.runAt = opts.RunAt.Truncate(time.Millisecond)
	}
	for range maxIdempotencyRounds {
		if ins.key != "" {
			existing, err := s.idempotent(ctx, &ins)
			if err != nil || !existing.IsZero() {
				return existing, err
			}
		}
		snap, created, err := s.insert(ctx, &ins)
		if err != nil {
			return task.Task{}, err
		}
		if created {
			return snap, nil
		}
		// A concurrent Enqueue took the key after the lookup: look again.
	}
	return task.Task{}, errors.New("postgres: enqueue: the idempotency key stayed contended")
}

// insertion is what Enqueue inserts.
type insertion struct {
	cc    *task.CreationContext
	id    string
	e     storerules.Enqueue
	key   string
	runAt time.Time
}

// insert creates the task and its job in one statement, and
// emits the event after commit. It returns created false, and no error,
// when the idempotency key is taken.
func (s *Store) insert(ctx context.Context, ins *insertion) (task.Task, bool, error) {
	var key, runAt any
	if ins.key != "" {
		key = ins.key
	}
	if !ins.runAt.IsZero() {
		runAt = ins.runAt
	}
	var created time.Time
	err := s.pool.QueryRow(ctx, s.q.enqueue, s.now(), ins.id, ins.cc.Request.Endpoint, ins.cc.Request.Tenant,
		ins.cc.Request.Principal, ins.cc.Origin.Tool(), ins.cc.Origin.Persisted(), ins.e.TTL.Milliseconds(),
		ins.e.PollInterval.Milliseconds(), key, ins.e.MaxAttempts, runAt, taskdata.TraceColumn(ins.cc), ins.e.Queue,
		int16(ins.e.Priority)).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		return task.Task{}, false, nil
	}
	if err != nil {
		return task.Task{}, false, wrapErr("insert task", err)
	}
	s.emit(event{taskID: ins.id})
	snap, err := ins.e.Created(ins.id, ins.cc.Origin, created)
	if err != nil {
		return task.Task{}, false, fmt.Errorf("postgres: %w", err)
	}
	return snap, true, nil
}

// idempotent returns the live task holding the idempotency key, or the zero
// Task when there is none; an expired holder is deleted to free the key. It
// fails with backend.ErrIdempotencyConflict when the holder's arguments
// differ. A holder that disappears concurrently only costs another round.
func (s *Store) idempotent(ctx context.Context, ins *insertion) (task.Task, error) {
	var expired bool
	var r taskRow
	err := s.pool.QueryRow(ctx, s.q.idempotencyHolder, s.now(), ins.cc.Request.Tenant, ins.cc.Request.Endpoint,
		ins.cc.Origin.Tool(), ins.key).Scan(append([]any{&expired}, r.fields()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return task.Task{}, nil
	}
	if err != nil {
		return task.Task{}, wrapErr("idempotency lookup", err)
	}
	if expired {
		if _, err := s.pool.Exec(ctx, s.q.deleteHolder, r.ID); err != nil {
			return task.Task{}, wrapErr("delete expired task", err)
		}
		return task.Task{}, nil
	}
	holder, err := r.snapshot()
	if err != nil {
		return task.Task{}, err
	}
	if !storerules.SameArguments(holder.Origin(), ins.cc.Origin) {
		return task.Task{}, backend.ErrIdempotencyConflict
	}
	return holder, nil
}
