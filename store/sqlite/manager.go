package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// taskColumns are the columns scanned into a taskRow, in order.
const taskColumns = `id, endpoint, tenant, kind, status, status_message, origin, created_at, updated_at,
	ttl_ms, poll_interval_ms, input_requests, input_responses, used_keys, result, error, cancel_requested,
	progress, progress_total`

// taskRow is one row of the tasks table.
type taskRow struct {
	id, endpoint, tenant, kind string
	status                     task.Status
	message                    string
	origin                     []byte
	createdAt, updatedAt       int64
	ttlMs, pollMs              int64
	requests, responses        []byte
	usedKeys                   []byte
	result, errJSON            []byte
	cancelRequested            bool
	progress, progressTotal    sql.NullFloat64
}

type scanner interface{ Scan(dest ...any) error }

func scanTask(sc scanner) (*taskRow, error) {
	var r taskRow
	var status string
	err := sc.Scan(&r.id, &r.endpoint, &r.tenant, &r.kind, &status, &r.message, &r.origin, &r.createdAt,
		&r.updatedAt, &r.ttlMs, &r.pollMs, &r.requests, &r.responses, &r.usedKeys, &r.result, &r.errJSON,
		&r.cancelRequested, &r.progress, &r.progressTotal)
	if err != nil {
		return nil, err
	}
	r.status = task.Status(status)
	return &r, nil
}

// snapshot builds the task.Task a row describes.
func (r *taskRow) snapshot() (task.Task, error) {
	origin, err := task.ParseOrigin(r.origin)
	if err != nil {
		return task.Task{}, fmt.Errorf("sqlite: task origin: %w", err)
	}
	p := task.Params{
		ID:            r.id,
		Origin:        origin,
		Status:        r.status,
		StatusMessage: r.message,
		CreatedAt:     time.UnixMilli(r.createdAt).UTC(),
		LastUpdatedAt: time.UnixMilli(r.updatedAt).UTC(),
		TTL:           time.Duration(r.ttlMs) * time.Millisecond,
		PollInterval:  time.Duration(r.pollMs) * time.Millisecond,
		Progress:      storedProgress(r.progress, r.progressTotal),
	}
	if p.InputRequests, err = taskdata.DecodeRequests(r.requests); err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	if p.Result, err = taskdata.DecodeResult(r.result); err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	if p.Error, err = taskdata.DecodeError(r.errJSON); err != nil {
		return task.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	t, err := task.New(p)
	if err != nil {
		return task.Task{}, fmt.Errorf("sqlite: stored task is invalid: %w", err)
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
// message and a job waiting for the answers becomes available. It returns task.ErrNotFound for unknown,
// expired and unauthorized tasks.
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
		outstanding, err := taskdata.DecodeRequests(r.requests)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		accepted, err := taskdata.DecodeResponses(r.responses)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		if accepted == nil {
			accepted = mcp.InputResponses{}
		}
		outstanding = maps.Clone(outstanding)
		changed := false
		for key, raw := range uc.Responses {
			req, ok := outstanding[key]
			if !ok || !json.Valid(raw) || !task.AnswerMatches(req, raw) {
				continue
			}
			accepted[key] = raw
			delete(outstanding, key)
			changed = true
		}
		if !changed {
			return nil, nil
		}
		reqJSON, err := taskdata.EncodeJSON(outstanding)
		if err != nil {
			return nil, wrapErr("encode input requests", err)
		}
		respJSON, err := taskdata.EncodeResponses(accepted)
		if err != nil {
			return nil, wrapErr("encode input responses", err)
		}
		// With every request answered the task works again, and the
		// message that asked for input is stale.
		status, message := r.status, r.message
		if len(outstanding) == 0 {
			status, message = task.Working, ""
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, status_message = ?, input_requests = ?,
			input_responses = ?, updated_at = max(updated_at, ?) WHERE id = ?`,
			string(status), message, nullText(reqJSON), nullText(respJSON), nowMs, r.id); err != nil {
			return nil, wrapErr("update task", err)
		}
		if len(outstanding) == 0 {
			// The job wakes with its run_at kept (it is in the past), so
			// it is claimed in its original place in the queue.
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'available'
				WHERE task_id = ? AND state IN ('awaiting_input', 'available')`, r.id); err != nil {
				return nil, wrapErr("wake job", err)
			}
		}
		if err := outbox(ctx, tx, r.id, nowMs); err != nil {
			return nil, err
		}
		return []string{r.id}, nil
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
		if r.cancelRequested || r.status.Terminal() {
			return nil, nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET cancel_requested = 1 WHERE id = ?`, r.id); err != nil {
			return nil, wrapErr("request cancel", err)
		}
		// A job awaiting input becomes available, keeping its run-at time
		// (when it parked), so that a worker sees the intent.
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'available'
			WHERE task_id = ? AND state = 'awaiting_input'`, r.id); err != nil {
			return nil, wrapErr("request cancel", err)
		}
		if err := outbox(ctx, tx, r.id, nowMs); err != nil {
			return nil, err
		}
		return []string{r.id}, nil
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
