package sqlite

import (
	"context"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// RescueExpired implements backend.JobStore. It takes at most p.Limit running
// jobs whose lease expired at or before p.Now, earliest expiry first (then
// task ID), and counts an interrupted run for each: a job whose interrupted
// runs reach p.MaxInterruptedRuns fails its task with the client-safe error
// {"code":-32603,"message":"The task failed after repeated attempts."};
// the others become available again with their run_at unchanged, so they
// are claimed before the jobs queued after them, and their next claim gets
// a new attempt. Their task's status message becomes
// backend.InterruptedMessage (when it was another), with an outbox row.
// Handler failures (failures, max_attempts) are not touched.
// Each update is fenced by the attempt the rescuer read. A zero p.Now means
// the store's clock.
func (j jobStore) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	now := p.Now
	if now.IsZero() {
		now = j.s.now()
	}
	return j.s.rescue(ctx, p, now, `SELECT task_id, attempt, interrupted_runs FROM jobs
			WHERE state = 'running' AND lease_expires_at <= ?
			ORDER BY lease_expires_at, task_id LIMIT ?`, now.UnixMilli())
}

// rescue takes at most p.Limit of the running jobs the query selects
// (task_id, attempt, interrupted_runs, in rescue order; its arguments are
// args and then the limit) and counts an interrupted run for each, at now:
// the job whose interrupted runs reach p.MaxInterruptedRuns fails its
// task, the others become available and their task's status message
// backend.InterruptedMessage. Each update is fenced by the attempt read.
func (s *Store) rescue(ctx context.Context, p backend.RescueParams, now time.Time, query string, args ...any) (int, error) {
	if p.Limit < 1 {
		return 0, nil
	}
	nowMs := now.UnixMilli()
	maxRuns := max(p.MaxInterruptedRuns, 1)
	args = append(args, p.Limit)
	var n int
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		n = 0
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, wrapErr("rescue", err)
		}
		type expired struct {
			id          string
			attempt     int64
			interrupted int
		}
		var list []expired
		for rows.Next() {
			var e expired
			if err := rows.Scan(&e.id, &e.attempt, &e.interrupted); err != nil {
				rows.Close()
				return nil, wrapErr("rescue", err)
			}
			list = append(list, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, wrapErr("rescue", err)
		}
		var publish []string
		for _, e := range list {
			exhausted := e.interrupted+1 >= maxRuns
			state := "available"
			if exhausted {
				state = "done"
			}
			res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, interrupted_runs = interrupted_runs + 1,
				lease_owner = NULL, lease_expires_at = NULL
				WHERE task_id = ? AND attempt = ? AND state = 'running'`,
				state, e.id, e.attempt)
			if err != nil {
				return nil, wrapErr("rescue", err)
			}
			if k, _ := res.RowsAffected(); k == 0 {
				continue
			}
			n++
			if exhausted {
				if err := setTerminal(ctx, tx, e.id, task.Failed, "", nil, exhaustedJSON, nowMs); err != nil {
					return nil, err
				}
				publish = append(publish, e.id)
				continue
			}
			res, err = tx.ExecContext(ctx, `UPDATE tasks SET status_message = ?, updated_at = max(updated_at, ?)
				WHERE id = ? AND status_message IS NOT ?`, backend.InterruptedMessage, nowMs, e.id, backend.InterruptedMessage)
			if err != nil {
				return nil, wrapErr("rescue", err)
			}
			if k, _ := res.RowsAffected(); k > 0 {
				if err := outbox(ctx, tx, e.id, nowMs); err != nil {
					return nil, err
				}
				publish = append(publish, e.id)
			}
		}
		return publish, nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteExpired implements backend.JobStore. It deletes at most limit tasks
// whose TTL passed at or before now, earliest expiry first (then task ID),
// with their jobs, and the console's per-minute completion counts older
// than backend.MaxActivityWindow. Their outbox rows stay until PruneOutbox.
// A zero now means the store's clock.
func (j jobStore) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	if now.IsZero() {
		now = s.now()
	}
	var n int
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE id IN (
			SELECT id FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?
			ORDER BY expires_at, id LIMIT ?)`, now.UnixMilli(), limit)
		if err != nil {
			return nil, wrapErr("delete expired", err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return nil, wrapErr("delete expired", err)
		}
		n = int(k)
		_, err = tx.ExecContext(ctx, `DELETE FROM task_activity WHERE minute < ?`,
			now.Add(-backend.MaxActivityWindow).UnixMilli()/60000)
		return nil, wrapErr("delete old activity", err)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// PruneOutbox deletes those of the limit oldest outbox rows (in write
// order) that were created before the given time, and returns how many.
// It reads at most limit rows: rows are written in time order, so the
// oldest ones are the first to pass the horizon, and the outbox needs no
// index on its time (migration 011). The outbox records every observable
// change for consumers that poll it; every worker runtime calls PruneOutbox
// with a horizon of worker.Options.OutboxRetention, which should be longer
// than any consumer's lag.
func (j jobStore) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	return s.deleteRows(ctx, "prune outbox", `DELETE FROM outbox WHERE id IN (
		SELECT id FROM (SELECT id, created_at FROM outbox ORDER BY id LIMIT ?2) WHERE created_at < ?1)`,
		before.UnixMilli(), limit)
}

// deleteRows runs one bounded DELETE on the writer and returns how many
// rows it deleted; nothing is published.
func (s *Store) deleteRows(ctx context.Context, what, query string, args ...any) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return nil, wrapErr(what, err)
		}
		k, err := res.RowsAffected()
		n = int(k)
		return nil, wrapErr(what, err)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
