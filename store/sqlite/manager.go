package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// taskColumns are the columns scanned into a taskRow, in order.
const taskColumns = `id, endpoint, tenant, kind, status, status_message, origin, created_at, updated_at,
	ttl_ms, poll_interval_ms, input_requests, input_responses, used_keys, result, error, cancel_requested,
	progress, progress_total`

// taskRow is one row of the tasks table: what a snapshot is built from,
// and the columns the store's own rules read.
type taskRow struct {
	taskdata.Row
	endpoint, tenant, kind string
	responses, usedKeys    []byte
	cancelRequested        bool
}

type scanner interface{ Scan(dest ...any) error }

func scanTask(sc scanner) (*taskRow, error) {
	var r taskRow
	var createdMs, updatedMs int64
	err := sc.Scan(&r.ID, &r.endpoint, &r.tenant, &r.kind, &r.Status, &r.Message, &r.Origin, &createdMs,
		&updatedMs, &r.TTLMs, &r.PollMs, &r.Requests, &r.responses, &r.usedKeys, &r.Result, &r.Error,
		&r.cancelRequested, &r.Progress, &r.ProgressTotal)
	if err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = time.UnixMilli(createdMs), time.UnixMilli(updatedMs)
	return &r, nil
}

// snapshot builds the task.Task a row describes.
func (r *taskRow) snapshot() (task.Task, error) {
	t, err := r.Snapshot()
	if err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	return t, nil
}

// liveTask loads the unexpired task named id, or returns nil when there is
// none.
func liveTask(ctx context.Context, q queryer, id string, nowMs int64) (*taskRow, error) {
	r, err := scanTask(q.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`, id, nowMs))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("load task", err)
	}
	return r, nil
}

// authorizedTask loads the unexpired task rc names when rc may see it, or
// returns nil. Unknown, expired and unauthorized tasks are indistinguishable.
func authorizedTask(ctx context.Context, q queryer, rc task.RequestContext, nowMs int64) (*taskRow, error) {
	r, err := liveTask(ctx, q, rc.TaskID, nowMs)
	if err != nil || r == nil || r.endpoint != rc.Endpoint || r.tenant != rc.Tenant {
		return nil, err
	}
	return r, nil
}

// FindTask implements task.Manager. It reads from the read-only pool and
// answers found false for unknown, expired and unauthorized tasks alike: the
// task's endpoint and tenant must equal the request's.
func (s *Store) FindTask(ctx context.Context, rc task.RequestContext) (task.Task, bool, error) {
	if !taskdata.Findable(rc) {
		return task.Task{}, false, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r, err := authorizedTask(ctx, s.rs, rc, s.now().UnixMilli())
	if err != nil || r == nil {
		return task.Task{}, false, err
	}
	t, err := r.snapshot()
	if err != nil {
		return task.Task{}, false, err
	}
	return t, true, nil
}

// UpdateTask implements task.Manager. Each response whose key names an
// outstanding input request and whose shape matches that request's method is
// accepted once: it is removed from the outstanding requests and added, byte
// for byte, to the task's accepted responses. Other responses are ignored.
// When nothing remains outstanding the task turns working with no status
// message and a job waiting for the answers becomes available
// (taskdata.Accept). It returns task.ErrNotFound for unknown, expired and
// unauthorized tasks.
func (s *Store) UpdateTask(ctx context.Context, uc task.UpdateContext) error {
	if !taskdata.Findable(uc.RequestContext) {
		return task.ErrNotFound
	}
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		r, err := authorizedTask(ctx, tx, uc.RequestContext, nowMs)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, task.ErrNotFound
		}
		a, changed, err := taskdata.Accept(r.Requests, r.responses, uc.Responses)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		if !changed {
			return nil, nil
		}
		status, message := r.Status, r.Message
		if a.Done {
			status, message = string(task.Working), ""
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, status_message = ?, input_requests = ?,
			input_responses = ?, updated_at = max(updated_at, ?) WHERE id = ?`,
			status, message, nullText(a.Requests), nullText(a.Responses), nowMs, r.ID); err != nil {
			return nil, wrapErr("update task", err)
		}
		if a.Done {
			// The job wakes with its run_at kept (it is in the past), so
			// it is claimed in its original place in the queue.
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'available'
				WHERE task_id = ? AND state IN ('awaiting_input', 'available')`, r.ID); err != nil {
				return nil, wrapErr("wake job", err)
			}
		}
		if err := outbox(ctx, tx, r.ID, nowMs); err != nil {
			return nil, err
		}
		return []string{r.ID}, nil
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
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		r, err := authorizedTask(ctx, tx, rc, nowMs)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, task.ErrNotFound
		}
		if r.cancelRequested || task.Status(r.Status).Terminal() {
			return nil, nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET cancel_requested = 1 WHERE id = ?`, r.ID); err != nil {
			return nil, wrapErr("request cancel", err)
		}
		// A job awaiting input becomes available, keeping its run-at time
		// (when it parked), so that a worker sees the intent.
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'available'
			WHERE task_id = ? AND state = 'awaiting_input'`, r.ID); err != nil {
			return nil, wrapErr("request cancel", err)
		}
		if err := outbox(ctx, tx, r.ID, nowMs); err != nil {
			return nil, err
		}
		return []string{r.ID}, nil
	})
}

// nullText turns an empty encoding into SQL NULL and anything else into
// TEXT (not BLOB, which the STRICT TEXT columns would reject).
func nullText(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
