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

var _ backend.OperatorSource = (*Store)(nil)

// Operator returns the store's backend.Operator, for package console: it
// reads and acts on every tenant's tasks, bypassing the authorization
// binding of task.Manager, so it must only be reachable behind operator
// authentication. It is kept off *Store so that an application's handle
// shows only what the application uses. It is valid until Close.
func (s *Store) Operator() backend.Operator { return operator{s} }

// operator is the Store's operator side (see Operator).
type operator struct{ s *Store }

// summaryColumns are the columns scanned into a backend.TaskSummary.
const summaryColumns = `id, kind, endpoint, tenant, status, status_message, created_at, updated_at, expires_at`

// Operator statements. $1 is {{now}} as everywhere.
const (
	// Walks tasks_created backwards from the position ($2 created_at, $3
	// id), keeping the unexpired tasks that match the filters ($4 status,
	// $5 tool, $6 tenant; '' matches all; $7..$8 the created range, NULL:
	// open), at most $9 rows.
	sqlOperatorTasks = `SELECT ` + summaryColumns + ` FROM {{schema}}.tasks
		WHERE (created_at, id) < ($2::timestamptz, $3::text) AND ` + live + `
		AND ($4::text = '' OR status = $4) AND ($5::text = '' OR kind = $5) AND ($6::text = '' OR tenant = $6)
		AND ($7::timestamptz IS NULL OR created_at >= $7) AND ($8::timestamptz IS NULL OR created_at < $8)
		ORDER BY created_at DESC, id DESC LIMIT $9`

	sqlOperatorCounts = `SELECT kind, status, count(*) FROM {{schema}}.tasks GROUP BY kind, status ORDER BY kind, status`

	sqlOperatorTask = `SELECT ` + summaryColumns + `, origin, result, error, progress, progress_total,
		cancel_requested FROM {{schema}}.tasks WHERE id = $2 AND ` + live

	sqlOperatorJob = `SELECT state, attempt, failures, max_attempts, interrupted_runs, input_rounds, run_at, lease_owner,
		lease_expires_at, claimed_attempt, claimed_by, claimed_at, coalesce(octet_length(checkpoint), 0), checkpoint_at
		FROM {{schema}}.jobs WHERE task_id = $1`

	sqlOperatorEvents = `SELECT at, kind, attempt, worker, message, category, run_at FROM {{schema}}.task_events
		WHERE task_id = $1 ORDER BY id LIMIT $2`

	// $2 since. Completions are counted in task_activity; completed rows
	// are those of an older version (migration 013).
	sqlOperatorActivity = `SELECT minute, 'completed', sum(completed)::bigint FROM {{schema}}.task_activity
		WHERE minute >= $2 AND minute <= {{now}} GROUP BY 1
		UNION ALL
		SELECT date_trunc('minute', at), kind, count(*) FROM {{schema}}.task_events
		WHERE kind IN ('completed', 'failed', 'cancelled') AND at >= $2 AND at <= {{now}} GROUP BY 1, 2`

	sqlOperatorBinding = `SELECT endpoint, tenant, principal FROM {{schema}}.tasks WHERE id = $2 AND ` + live

	sqlOperatorLockFailed = `SELECT endpoint, tenant, principal, status, origin, ttl_ms, poll_interval_ms, queue, priority
		FROM {{schema}}.tasks WHERE id = $2 AND ` + live + ` FOR UPDATE`

	sqlOperatorRetried = `INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, message)
		VALUES ($2, {{now}}, 'retried', coalesce((SELECT attempt FROM {{schema}}.jobs WHERE task_id = $2), 0), $3)`

	// Deletes a finished task ($2), reporting whether one existed and
	// whether it was finished; its job row is locked first, as every
	// deletion does.
	sqlOperatorDelete = `WITH t AS (SELECT id, status FROM {{schema}}.tasks WHERE id = $2 AND ` + live + ` FOR UPDATE),
		d AS (DELETE FROM {{schema}}.tasks WHERE id IN (SELECT id FROM t WHERE status IN ('completed', 'failed', 'cancelled'))
			RETURNING id)
		SELECT t.status, EXISTS (SELECT 1 FROM d) FROM t`
)

// Tasks implements backend.Operator in one statement along
// tasks_created. Cursors are keyset positions authenticated with the
// schema's cursor key together with the query's filters.
func (o operator) Tasks(ctx context.Context, q backend.OperatorQuery) (backend.OperatorPage, error) {
	s := o.s
	if err := storerules.CheckOperatorQuery(q); err != nil {
		return backend.OperatorPage{}, fmt.Errorf("postgres: %w", err)
	}
	scope := storerules.OperatorCursorScope(q)
	at, id := listStart, ""
	if q.Cursor != "" {
		p, err := s.cursors.Decode(scope, q.Cursor)
		if err != nil {
			return backend.OperatorPage{}, err
		}
		at, id = time.UnixMicro(p.At).UTC(), p.ID
	}
	var from, before any
	if !q.CreatedFrom.IsZero() {
		from = q.CreatedFrom
	}
	if !q.CreatedBefore.IsZero() {
		before = q.CreatedBefore
	}
	limit := storerules.OperatorLimit(q.Limit)
	rows, err := s.pool.Query(ctx, s.q.expand(sqlOperatorTasks), s.now(), at, id, string(q.Status), q.Tool, q.Tenant,
		from, before, limit+1)
	if err != nil {
		return backend.OperatorPage{}, wrapErr("operator tasks", err)
	}
	defer rows.Close()
	var tasks []backend.TaskSummary
	for rows.Next() {
		sum, err := scanSummary(rows)
		if err != nil {
			return backend.OperatorPage{}, wrapErr("operator tasks", err)
		}
		tasks = append(tasks, sum)
	}
	if err := rows.Err(); err != nil {
		return backend.OperatorPage{}, wrapErr("operator tasks", err)
	}
	page, err := storerules.OperatorPage(s.cursors, q, tasks, limit, time.Time.UnixMicro)
	if err != nil {
		return backend.OperatorPage{}, fmt.Errorf("postgres: %w", err)
	}
	return page, nil
}

// summaryDest are the scan destinations of summaryColumns; expires is
// copied into t.ExpiresAt by finish.
type summaryDest struct {
	t       backend.TaskSummary
	status  string
	expires *time.Time
}

func (d *summaryDest) fields() []any {
	return []any{&d.t.ID, &d.t.Tool, &d.t.Endpoint, &d.t.Tenant, &d.status, &d.t.StatusMessage, &d.t.CreatedAt,
		&d.t.UpdatedAt, &d.expires}
}

func (d *summaryDest) finish() backend.TaskSummary {
	d.t.Status = task.Status(d.status)
	d.t.CreatedAt, d.t.UpdatedAt = d.t.CreatedAt.UTC(), d.t.UpdatedAt.UTC()
	if d.expires != nil {
		d.t.ExpiresAt = d.expires.UTC()
	}
	return d.t
}

func scanSummary(row pgx.Row) (backend.TaskSummary, error) {
	var d summaryDest
	if err := row.Scan(d.fields()...); err != nil {
		return backend.TaskSummary{}, err
	}
	return d.finish(), nil
}

// Counts implements backend.Operator: one grouped scan of the
// tasks table.
func (o operator) Counts(ctx context.Context) ([]backend.TaskCount, error) {
	s := o.s
	rows, err := s.pool.Query(ctx, s.q.expand(sqlOperatorCounts))
	if err != nil {
		return nil, wrapErr("operator counts", err)
	}
	defer rows.Close()
	out, err := taskdata.TaskCounts(rows)
	if err != nil {
		return nil, wrapErr("operator counts", err)
	}
	return out, nil
}

// Task implements backend.Operator from one repeatable-read
// snapshot.
func (o operator) Task(ctx context.Context, id string) (backend.OperatorTask, error) {
	s := o.s
	if task.ValidID(id) != nil {
		return backend.OperatorTask{}, task.ErrNotFound
	}
	var ot backend.OperatorTask
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			var d summaryDest
			var origin, result, errJSON []byte
			var cur, total *float64
			err := tx.QueryRow(ctx, s.q.expand(sqlOperatorTask), s.now(), id).Scan(append(d.fields(),
				&origin, &result, &errJSON, &cur, &total, &ot.CancelRequested)...)
			if errors.Is(err, pgx.ErrNoRows) {
				return task.ErrNotFound
			}
			if err != nil {
				return wrapErr("operator task", err)
			}
			ot.TaskSummary = d.finish()
			if err := taskdata.OperatorPayload(&ot, origin, result, errJSON, cur, total); err != nil {
				return fmt.Errorf("postgres: %w", err)
			}
			return s.operatorJobAndHistory(ctx, tx, id, &ot)
		})
	if err != nil {
		return backend.OperatorTask{}, err
	}
	return ot, nil
}

// operatorJobAndHistory reads, in tx, the job row of task id and its
// history into ot, whose summary is read already: the recorded rows merged
// with the steps the task and job rows hold (migration 013).
func (s *Store) operatorJobAndHistory(ctx context.Context, tx pgx.Tx, id string, ot *backend.OperatorTask) error {
	var j backend.JobInfo
	var owner, claimedBy *string
	var leaseExp, claimedAt, checkpointAt *time.Time
	var claimedAttempt *int64
	var checkpointBytes int32
	err := tx.QueryRow(ctx, s.q.expand(sqlOperatorJob), id).Scan(&j.State, &j.Attempt, &j.Failures,
		&j.MaxAttempts, &j.InterruptedRuns, &j.InputRounds, &j.RunAt, &owner, &leaseExp, &claimedAttempt,
		&claimedBy, &claimedAt, &checkpointBytes, &checkpointAt)
	h := storerules.History{Created: ot.CreatedAt}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return wrapErr("operator task job", err)
	default:
		j.RunAt = j.RunAt.UTC()
		if owner != nil {
			j.Worker = *owner
		}
		if leaseExp != nil {
			j.LeaseExpires = leaseExp.UTC()
		}
		if j.CheckpointBytes = int(checkpointBytes); checkpointAt != nil && j.CheckpointBytes > 0 {
			j.CheckpointAt = checkpointAt.UTC()
		}
		ot.Job = &j
		if claimedAttempt != nil && *claimedAttempt == j.Attempt && claimedAt != nil && claimedBy != nil {
			h.Claim = &backend.TaskEvent{At: claimedAt.UTC(), Kind: backend.EventClaimed, Attempt: j.Attempt,
				Worker: *claimedBy}
		}
	}
	if ot.Status == task.Completed {
		h.Completed = &backend.TaskEvent{At: ot.UpdatedAt, Kind: backend.EventCompleted, Message: ot.StatusMessage}
		if ot.Job != nil {
			h.Completed.Attempt = ot.Job.Attempt
		}
	}
	rows, err := tx.Query(ctx, s.q.expand(sqlOperatorEvents), id, backend.MaxTaskEvents)
	if err != nil {
		return wrapErr("operator task events", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e backend.TaskEvent
		var kind, category string
		var runAt *time.Time
		if err := rows.Scan(&e.At, &kind, &e.Attempt, &e.Worker, &e.Message, &category, &runAt); err != nil {
			return wrapErr("operator task events", err)
		}
		e.At, e.Kind = e.At.UTC(), backend.TaskEventKind(kind)
		e.Category = backend.FailureCategory(category).Recorded()
		if runAt != nil {
			e.RunAt = runAt.UTC()
		}
		h.Rows = append(h.Rows, e)
	}
	if err := rows.Err(); err != nil {
		return wrapErr("operator task events", err)
	}
	ot.Events = storerules.MergeHistory(h)
	return nil
}

// Activity implements backend.Operator: the completion counts of
// task_activity, and a grouped range scan of task_events_ended for the
// tasks that failed or were cancelled.
func (o operator) Activity(ctx context.Context, since time.Time) ([]backend.ActivityBucket, error) {
	s := o.s
	since = storerules.ActivitySince(s.clock(), since)
	rows, err := s.pool.Query(ctx, s.q.expand(sqlOperatorActivity), s.now(), since)
	if err != nil {
		return nil, wrapErr("operator activity", err)
	}
	defer rows.Close()
	var acc storerules.Activity
	for rows.Next() {
		var minute time.Time
		var kind string
		var n int64
		if err := rows.Scan(&minute, &kind, &n); err != nil {
			return nil, wrapErr("operator activity", err)
		}
		acc.Add(minute, backend.TaskEventKind(kind), n)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("operator activity", err)
	}
	return acc.Buckets(), nil
}

// Cancel implements backend.Operator through RequestCancel, with
// the task's own binding.
func (o operator) Cancel(ctx context.Context, id string) error {
	s := o.s
	if task.ValidID(id) != nil {
		return task.ErrNotFound
	}
	rc := task.RequestContext{TaskID: id}
	err := s.pool.QueryRow(ctx, s.q.expand(sqlOperatorBinding), s.now(), id).Scan(&rc.Endpoint, &rc.Tenant, &rc.Principal)
	if errors.Is(err, pgx.ErrNoRows) {
		return task.ErrNotFound
	}
	if err != nil {
		return wrapErr("operator task binding", err)
	}
	return s.RequestCancel(ctx, rc)
}

// Retry implements backend.Operator: the failed task is locked,
// and the new task, its job and the failed task's "retried" event commit
// in one transaction.
func (o operator) Retry(ctx context.Context, id string) (task.Task, error) {
	s := o.s
	if task.ValidID(id) != nil {
		return task.Task{}, task.ErrNotFound
	}
	var snap task.Task
	err := s.inTx(ctx, func(tx pgx.Tx) ([]event, error) {
		now := s.now()
		var cc task.CreationContext
		var status string
		var origin []byte
		var ttlMs, pollMs int64
		var queue string
		var priority int16
		err := tx.QueryRow(ctx, s.q.expand(sqlOperatorLockFailed), now, id).Scan(&cc.Request.Endpoint,
			&cc.Request.Tenant, &cc.Request.Principal, &status, &origin, &ttlMs, &pollMs, &queue, &priority)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, task.ErrNotFound
		}
		if err != nil {
			return nil, wrapErr("operator retry", err)
		}
		if task.Status(status) != task.Failed {
			return nil, backend.ErrNotFailed
		}
		if cc.Origin, err = task.ParseOrigin(origin); err != nil {
			return nil, fmt.Errorf("postgres: task origin: %w", err)
		}
		opts := storerules.RetryOptions(time.Duration(ttlMs)*time.Millisecond, time.Duration(pollMs)*time.Millisecond,
			queue, int(priority))
		e, err := storerules.ResolveEnqueue(&cc, opts, s.enqueueDefaults())
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		newID, err := taskdata.NewID(s.clock())
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		var created time.Time
		if err := tx.QueryRow(ctx, s.q.enqueue, now, newID, cc.Request.Endpoint, cc.Request.Tenant,
			cc.Request.Principal, cc.Origin.Tool(), cc.Origin.Persisted(), e.TTL.Milliseconds(),
			e.PollInterval.Milliseconds(), nil, e.MaxAttempts, nil, nil, e.Queue, int16(e.Priority)).Scan(&created); err != nil {
			return nil, wrapErr("operator retry", err)
		}
		if _, err := tx.Exec(ctx, s.q.expand(sqlOperatorRetried), now, id, newID); err != nil {
			return nil, wrapErr("operator retry", err)
		}
		if snap, err = e.Created(newID, cc.Origin, created); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		return []event{{taskID: newID}, {taskID: id}}, nil
	})
	if err != nil {
		return task.Task{}, err
	}
	return snap, nil
}

// Delete implements backend.Operator. The deletion is published,
// so that a waiting client reads the task as gone.
func (o operator) Delete(ctx context.Context, id string) error {
	s := o.s
	if task.ValidID(id) != nil {
		return task.ErrNotFound
	}
	return s.inTx(ctx, func(tx pgx.Tx) ([]event, error) {
		var status string
		var deleted bool
		err := tx.QueryRow(ctx, s.q.expand(sqlOperatorDelete), s.now(), id).Scan(&status, &deleted)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, task.ErrNotFound
		}
		if err != nil {
			return nil, wrapErr("operator delete", err)
		}
		if !deleted {
			return nil, backend.ErrNotFinished
		}
		return []event{{taskID: id}}, nil
	})
}
