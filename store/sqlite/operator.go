package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/listcursor"
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

// sqlOperatorTasks walks tasks_created backwards from the position ($1
// created_at, $2 id), keeping the unexpired ($3) tasks that match the
// filters ($4 status, $5 tool, $6 tenant; the empty string matches all;
// $7..$8 the created range), at most $9 rows. A page reads its length plus
// the rows the filters skip. sqlOperatorTasksByStatus walks tasks_status
// instead, reading only the rows of the status asked for; that index holds
// only the tasks that are not working (migration 011), so a listing of
// working tasks walks tasks_created, where nearly every entry matches.
const (
	sqlOperatorTasks = `SELECT ` + summaryColumns + ` FROM tasks INDEXED BY tasks_created
	WHERE (created_at, id) < (?1, ?2) AND (expires_at IS NULL OR expires_at > ?3)
	AND (?4 = '' OR status = ?4) AND (?5 = '' OR kind = ?5) AND (?6 = '' OR tenant = ?6)
	AND created_at >= ?7 AND created_at < ?8
	ORDER BY created_at DESC, id DESC LIMIT ?9`

	sqlOperatorTasksByStatus = `SELECT ` + summaryColumns + ` FROM tasks INDEXED BY tasks_status
	WHERE status = ?4 AND status <> 'working' AND (created_at, id) < (?1, ?2) AND (expires_at IS NULL OR expires_at > ?3)
	AND (?5 = '' OR kind = ?5) AND (?6 = '' OR tenant = ?6)
	AND created_at >= ?7 AND created_at < ?8
	ORDER BY status DESC, created_at DESC, id DESC LIMIT ?9`
)

// Tasks implements backend.Operator on the read-only pool.
// Cursors are keyset positions authenticated with the database's cursor
// key together with the query's filters.
func (o operator) Tasks(ctx context.Context, q backend.OperatorQuery) (backend.OperatorPage, error) {
	s := o.s
	if err := storerules.CheckOperatorQuery(q); err != nil {
		return backend.OperatorPage{}, fmt.Errorf("sqlite: %w", err)
	}
	scope := storerules.OperatorCursorScope(q)
	after := listcursor.Position{At: math.MaxInt64}
	if q.Cursor != "" {
		p, err := s.cursors.Decode(scope, q.Cursor)
		if err != nil {
			return backend.OperatorPage{}, err
		}
		after = p
	}
	from, before := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.CreatedFrom.IsZero() {
		from = q.CreatedFrom.UnixMilli()
	}
	if !q.CreatedBefore.IsZero() {
		before = q.CreatedBefore.UnixMilli()
	}
	limit := storerules.OperatorLimit(q.Limit)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	query := sqlOperatorTasks
	if q.Status != "" && q.Status != task.Working {
		query = sqlOperatorTasksByStatus
	}
	rows, err := s.rs.QueryContext(ctx, query, after.At, after.ID, s.now().UnixMilli(),
		string(q.Status), q.Tool, q.Tenant, from, before, limit+1)
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
	page, err := storerules.OperatorPage(s.cursors, q, tasks, limit, time.Time.UnixMilli)
	if err != nil {
		return backend.OperatorPage{}, fmt.Errorf("sqlite: %w", err)
	}
	return page, nil
}

func scanSummary(sc scanner) (backend.TaskSummary, error) {
	var t backend.TaskSummary
	var status string
	var created, updated int64
	var expires sql.NullInt64
	if err := sc.Scan(&t.ID, &t.Tool, &t.Endpoint, &t.Tenant, &status, &t.StatusMessage, &created, &updated,
		&expires); err != nil {
		return backend.TaskSummary{}, err
	}
	t.Status = task.Status(status)
	t.CreatedAt, t.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	if expires.Valid {
		t.ExpiresAt = time.UnixMilli(expires.Int64).UTC()
	}
	return t, nil
}

// Counts implements backend.Operator from task_counts, which
// triggers keep (migration 007): it reads one row per tool and status.
func (o operator) Counts(ctx context.Context) ([]backend.TaskCount, error) {
	s := o.s
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.rs.QueryContext(ctx, `SELECT kind, status, n FROM task_counts WHERE n > 0 ORDER BY kind, status`)
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

// Task implements backend.Operator from one read transaction.
func (o operator) Task(ctx context.Context, id string) (backend.OperatorTask, error) {
	s := o.s
	if task.ValidID(id) != nil {
		return backend.OperatorTask{}, task.ErrNotFound
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return backend.OperatorTask{}, wrapErr("operator task", err)
	}
	defer tx.Rollback()
	var ot backend.OperatorTask
	var origin, result, errJSON []byte
	var cur, total *float64
	var status string
	var created, updated int64
	var expires sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT `+summaryColumns+`, origin, result, error, progress, progress_total,
		cancel_requested FROM tasks WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`, id, s.now().UnixMilli()).
		Scan(&ot.ID, &ot.Tool, &ot.Endpoint, &ot.Tenant, &status, &ot.StatusMessage, &created, &updated, &expires,
			&origin, &result, &errJSON, &cur, &total, &ot.CancelRequested)
	if errors.Is(err, sql.ErrNoRows) {
		return backend.OperatorTask{}, task.ErrNotFound
	}
	if err != nil {
		return backend.OperatorTask{}, wrapErr("operator task", err)
	}
	ot.Status = task.Status(status)
	ot.CreatedAt, ot.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	if expires.Valid {
		ot.ExpiresAt = time.UnixMilli(expires.Int64).UTC()
	}
	if err := taskdata.OperatorPayload(&ot, origin, result, errJSON, cur, total); err != nil {
		return backend.OperatorTask{}, fmt.Errorf("sqlite: %w", err)
	}
	var claim *backend.TaskEvent
	if ot.Job, claim, err = operatorJob(ctx, tx, id); err != nil {
		return backend.OperatorTask{}, err
	}
	rows, err := operatorEvents(ctx, tx, id)
	if err != nil {
		return backend.OperatorTask{}, err
	}
	h := storerules.History{Rows: rows, Created: ot.CreatedAt, Claim: claim}
	if ot.Status == task.Completed {
		var attempt int64
		if ot.Job != nil {
			attempt = ot.Job.Attempt
		}
		h.Completed = &backend.TaskEvent{At: ot.UpdatedAt, Kind: backend.EventCompleted, Attempt: attempt,
			Message: ot.StatusMessage}
	}
	ot.Events = storerules.MergeHistory(h)
	return ot, nil
}

// Activity implements backend.Operator: the completions counted
// per minute in task_activity, and a grouped range scan of
// task_events_ended for the failed and cancelled tasks (completed rows
// there are the steps of pruned jobs, or were written before migration
// 011, which counted the last hour of them into task_activity).
func (o operator) Activity(ctx context.Context, since time.Time) ([]backend.ActivityBucket, error) {
	s := o.s
	now := s.now()
	since = storerules.ActivitySince(now, since)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.rs.QueryContext(ctx, `SELECT at / 60000, kind, count(*) FROM task_events INDEXED BY task_events_ended
		WHERE kind IN ('completed', 'failed', 'cancelled') AND kind <> 'completed' AND at >= ?1 GROUP BY 1, 2
		UNION ALL SELECT minute, 'completed', completed FROM task_activity WHERE minute >= ?1 / 60000`, since.UnixMilli())
	if err != nil {
		return nil, wrapErr("operator activity", err)
	}
	defer rows.Close()
	var acc storerules.Activity
	for rows.Next() {
		var minute, n int64
		var kind string
		if err := rows.Scan(&minute, &kind, &n); err != nil {
			return nil, wrapErr("operator activity", err)
		}
		acc.Add(time.Unix(minute*60, 0), backend.TaskEventKind(kind), n)
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
	rc, err := s.binding(ctx, id)
	if err != nil {
		return err
	}
	return s.RequestCancel(ctx, rc)
}

// binding returns the request context of the task's own caller.
func (s *Store) binding(ctx context.Context, id string) (task.RequestContext, error) {
	if task.ValidID(id) != nil {
		return task.RequestContext{}, task.ErrNotFound
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rc := task.RequestContext{TaskID: id}
	err := s.rs.QueryRowContext(ctx, `SELECT endpoint, tenant, principal FROM tasks
		WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`, id, s.now().UnixMilli()).
		Scan(&rc.Endpoint, &rc.Tenant, &rc.Principal)
	if errors.Is(err, sql.ErrNoRows) {
		return task.RequestContext{}, task.ErrNotFound
	}
	if err != nil {
		return task.RequestContext{}, wrapErr("operator task binding", err)
	}
	return rc, nil
}

// Retry implements backend.Operator: the new task, its job and
// the failed task's "retried" event commit in one transaction.
func (o operator) Retry(ctx context.Context, id string) (task.Task, error) {
	s := o.s
	if task.ValidID(id) != nil {
		return task.Task{}, task.ErrNotFound
	}
	var snap task.Task
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		var cc task.CreationContext
		var status string
		var origin []byte
		var ttlMs, pollMs int64
		var queue string
		var priority int
		err := tx.QueryRowContext(ctx, `SELECT endpoint, tenant, principal, status, origin, ttl_ms, poll_interval_ms,
			queue, priority FROM tasks WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`, id, nowMs).
			Scan(&cc.Request.Endpoint, &cc.Request.Tenant, &cc.Request.Principal, &status, &origin, &ttlMs, &pollMs,
				&queue, &priority)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, task.ErrNotFound
		}
		if err != nil {
			return nil, wrapErr("operator retry", err)
		}
		if task.Status(status) != task.Failed {
			return nil, backend.ErrNotFailed
		}
		if cc.Origin, err = task.ParseOrigin(origin); err != nil {
			return nil, fmt.Errorf("sqlite: task origin: %w", err)
		}
		opts := storerules.RetryOptions(time.Duration(ttlMs)*time.Millisecond, time.Duration(pollMs)*time.Millisecond,
			queue, priority)
		e, err := storerules.ResolveEnqueue(&cc, opts, s.enqueueDefaults())
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		snap, err = s.insertTask(ctx, tx, &cc, e, opts, nowMs)
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO task_events (task_id, at, kind, attempt, message)
			VALUES (?1, ?2, 'retried', coalesce((SELECT attempt FROM jobs WHERE task_id = ?1), 0), ?3)`,
			id, nowMs, snap.ID()); err != nil {
			return nil, wrapErr("operator retry", err)
		}
		return []string{snap.ID(), id}, nil
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
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM tasks WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`,
			id, s.now().UnixMilli()).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, task.ErrNotFound
		}
		if err != nil {
			return nil, wrapErr("operator delete", err)
		}
		if !task.Status(status).Terminal() {
			return nil, backend.ErrNotFinished
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE id = ?`, id); err != nil {
			return nil, wrapErr("operator delete", err)
		}
		return []string{id}, nil
	})
}
