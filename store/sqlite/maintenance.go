package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// RescueExpired implements backend.JobStore. It takes at most p.Limit running
// jobs whose lease expired at or before p.Now, earliest expiry first (then
// task ID), and counts an interrupted run for each: a job whose interrupted
// runs reach p.MaxInterruptedRuns fails its task with the client-safe error
// {"code":-32603,"message":"The task failed after repeated attempts."};
// the others become available again with their run_at unchanged, so they
// are claimed before the jobs queued after them, and their next claim gets
// a new attempt. Handler failures (failures, max_attempts) are not touched.
// Each update is fenced by the attempt the rescuer read. A zero p.Now means
// the store's clock.
func (j jobStore) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	s := j.s
	if p.Limit < 1 {
		return 0, nil
	}
	now := p.Now
	if now.IsZero() {
		now = s.now()
	}
	nowMs := now.UnixMilli()
	maxRuns := max(p.MaxInterruptedRuns, 1)
	var n int
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		n = 0
		rows, err := tx.QueryContext(ctx, `SELECT task_id, attempt, interrupted_runs FROM jobs
			WHERE state = 'running' AND lease_expires_at <= ?
			ORDER BY lease_expires_at, task_id LIMIT ?`, nowMs, p.Limit)
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
				WHERE task_id = ? AND attempt = ? AND state = 'running' AND lease_expires_at <= ?`,
				state, e.id, e.attempt, nowMs)
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

// Stats are counts of a store's rows, for monitoring.
type Stats struct {
	// Tasks counts tasks by status, expired ones included until deleted.
	Tasks map[task.Status]int
	// Jobs counts jobs by state: available, running, awaiting_input,
	// done.
	Jobs map[string]int
	// Outbox counts outbox rows; LastOutboxID is the newest row's ID.
	Outbox       int
	LastOutboxID int64
	// SchemaVersion is the database's schema version.
	SchemaVersion int
}

// Stats counts the store's rows from one read transaction.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Tasks: map[task.Status]int{}, Jobs: map[string]int{}}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	defer tx.Rollback()
	if err := countBy(ctx, tx, `SELECT status, count(*) FROM tasks GROUP BY status`, st.Tasks); err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	if err := countBy(ctx, tx, `SELECT state, count(*) FROM jobs GROUP BY state`, st.Jobs); err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), max(id) FROM outbox`).Scan(&st.Outbox, &last); err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	st.LastOutboxID = last.Int64
	if st.SchemaVersion, err = s.version(ctx, tx); err != nil {
		return Stats{}, err
	}
	return st, nil
}

// countBy adds the rows of a grouped count query to into.
func countBy[K ~string](ctx context.Context, tx *sql.Tx, query string, into map[K]int) error {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskdata.CountBy(rows, into)
}
