package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// taskRow is one row of the tasks table, as taskColumns lists it.
type taskRow struct{ taskdata.Row }

// fields are the scan destinations of taskColumns.
func (r *taskRow) fields() []any {
	return []any{&r.ID, &r.Status, &r.Message, &r.Origin, &r.CreatedAt, &r.UpdatedAt, &r.TTLMs, &r.PollMs,
		&r.Requests, &r.Result, &r.Error, &r.Progress, &r.ProgressTotal}
}

func scanTask(row pgx.Row) (*taskRow, error) {
	var r taskRow
	if err := row.Scan(r.fields()...); err != nil {
		return nil, err
	}
	return &r, nil
}

// snapshot builds the task.Task a row describes.
func (r *taskRow) snapshot() (task.Task, error) {
	t, err := r.Snapshot()
	if err != nil {
		return task.Task{}, fmt.Errorf("postgres: %w", err)
	}
	return t, nil
}

// FindTask implements task.Manager. It answers found false for unknown,
// expired and unauthorized tasks alike: the task's endpoint and tenant must
// equal the request's, in the same statement that reads it.
func (s *Store) FindTask(ctx context.Context, rc task.RequestContext) (task.Task, bool, error) {
	if !taskdata.Findable(rc) {
		return task.Task{}, false, nil
	}
	r, err := scanTask(s.pool.QueryRow(ctx, s.q.findTask, s.now(), rc.TaskID, rc.Endpoint, rc.Tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return task.Task{}, false, nil
	}
	if err != nil {
		return task.Task{}, false, wrapErr("find task", err)
	}
	t, err := r.snapshot()
	if err != nil {
		return task.Task{}, false, err
	}
	return t, true, nil
}

// UpdateTask implements task.Manager. Each response whose key names an
// outstanding input request and whose shape matches that request's method is
// accepted once: it is removed from the outstanding requests and added to
// the task's accepted responses, byte for byte. Other responses are ignored.
// When nothing remains outstanding the task turns working with no status
// message and a job waiting for the answers becomes available
// (taskdata.Accept). It returns task.ErrNotFound for
// unknown, expired and unauthorized tasks.
func (s *Store) UpdateTask(ctx context.Context, uc task.UpdateContext) error {
	if !taskdata.Findable(uc.RequestContext) {
		return task.ErrNotFound
	}
	return s.inTx(ctx, func(tx pgx.Tx) ([]event, error) {
		now := s.now()
		var status string
		var reqJSON, respJSON []byte
		err := tx.QueryRow(ctx, s.q.lockForUpdate, now, uc.TaskID, uc.Endpoint, uc.Tenant).
			Scan(&status, &reqJSON, &respJSON)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, task.ErrNotFound
		}
		if err != nil {
			return nil, wrapErr("update task", err)
		}
		a, changed, err := taskdata.Accept(reqJSON, respJSON, uc.Responses)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if !changed {
			return nil, nil
		}
		if a.Done {
			status = string(task.Working)
		}
		var ev event
		if err := tx.QueryRow(ctx, s.q.acceptResponses, now, uc.TaskID, status, a.Requests, a.Responses,
			a.Done).Scan(&ev.id, &ev.taskID); err != nil {
			return nil, wrapErr("update task", err)
		}
		return []event{ev}, nil
	})
}

// RequestCancel implements task.Manager. It records cancellation intent
// once and publishes it; a worker reads it with CancelRequested, and a job
// waiting for input becomes claimable so that a worker sees the intent.
// Terminal tasks are left unchanged and the call succeeds. It returns
// task.ErrNotFound for unknown, expired and unauthorized tasks.
func (s *Store) RequestCancel(ctx context.Context, rc task.RequestContext) error {
	if !taskdata.Findable(rc) {
		return task.ErrNotFound
	}
	return s.inTx(ctx, func(tx pgx.Tx) ([]event, error) {
		now := s.now()
		var status string
		var requested bool
		err := tx.QueryRow(ctx, s.q.lockForCancel, now, rc.TaskID, rc.Endpoint, rc.Tenant).Scan(&status, &requested)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, task.ErrNotFound
		}
		if err != nil {
			return nil, wrapErr("request cancel", err)
		}
		if requested || task.Status(status).Terminal() {
			return nil, nil
		}
		var ev event
		if err := tx.QueryRow(ctx, s.q.requestCancel, now, rc.TaskID).Scan(&ev.id, &ev.taskID); err != nil {
			return nil, wrapErr("request cancel", err)
		}
		return []event{ev}, nil
	})
}

// inTx runs fn in one transaction and, after commit, emits the events fn
// returns.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) ([]event, error)) error {
	var evs []event
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		evs, err = fn(tx)
		return err
	})
	if err != nil {
		return err
	}
	s.emit(evs...)
	return nil
}
