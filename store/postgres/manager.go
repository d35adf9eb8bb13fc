package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// taskRow is one row of the tasks table, as taskColumns lists it.
type taskRow struct {
	id                   string
	status               string
	message              string
	origin               []byte
	createdAt, updatedAt time.Time
	ttlMs, pollMs        int64
	requests             []byte
	result, errJSON      []byte
	progress, total      *float64
}

// fields are the scan destinations of taskColumns.
func (r *taskRow) fields() []any {
	return []any{&r.id, &r.status, &r.message, &r.origin, &r.createdAt, &r.updatedAt, &r.ttlMs, &r.pollMs,
		&r.requests, &r.result, &r.errJSON, &r.progress, &r.total}
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
	origin, err := task.ParseOrigin(r.origin)
	if err != nil {
		return task.Task{}, fmt.Errorf("postgres: task origin: %w", err)
	}
	p := task.Params{
		ID:            r.id,
		Origin:        origin,
		Status:        task.Status(r.status),
		StatusMessage: r.message,
		CreatedAt:     r.createdAt.UTC(),
		LastUpdatedAt: r.updatedAt.UTC(),
		TTL:           time.Duration(r.ttlMs) * time.Millisecond,
		PollInterval:  time.Duration(r.pollMs) * time.Millisecond,
		Progress:      storedProgress(r.progress, r.total),
	}
	if p.InputRequests, err = taskdata.DecodeRequests(r.requests); err != nil {
		return task.Task{}, fmt.Errorf("postgres: %w", err)
	}
	if p.Result, err = taskdata.DecodeResult(r.result); err != nil {
		return task.Task{}, fmt.Errorf("postgres: %w", err)
	}
	if p.Error, err = taskdata.DecodeError(r.errJSON); err != nil {
		return task.Task{}, fmt.Errorf("postgres: %w", err)
	}
	t, err := task.New(p)
	if err != nil {
		return task.Task{}, fmt.Errorf("postgres: stored task is invalid: %w", err)
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
// When nothing remains outstanding the task turns working and a job waiting
// for the answers becomes available. It returns task.ErrNotFound for
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
		outstanding, err := taskdata.DecodeRequests(reqJSON)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		accepted, err := taskdata.DecodeResponses(respJSON)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if accepted == nil {
			accepted = mcp.InputResponses{}
		}
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
		newReqs, err := taskdata.EncodeJSON(outstanding)
		if err != nil {
			return nil, wrapErr("encode input requests", err)
		}
		if len(outstanding) == 0 {
			status = string(task.Working)
		}
		var ev event
		if err := tx.QueryRow(ctx, s.q.acceptResponses, now, uc.TaskID, status, newReqs, encodeResponses(accepted),
			len(outstanding) == 0).Scan(&ev.id, &ev.taskID); err != nil {
			return nil, wrapErr("update task", err)
		}
		return []event{ev}, nil
	})
}

// encodeResponses encodes accepted input responses as a JSON object whose
// member values are the responses' bytes exactly as received (a number
// spelt 3.50 stays 3.50, white space and escapes stay), in key order; nil
// for none.
func encodeResponses(m mcp.InputResponses) []byte {
	if len(m) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(k) // a string always encodes
		b = append(b, key...)
		b = append(b, ':')
		b = append(b, m[k]...)
	}
	return append(b, '}')
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
