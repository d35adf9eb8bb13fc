package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/opsdata"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// sqlGaugeJobs counts the jobs that have not finished by kind, state,
// whether they are due and whether a run failed; jobs of expired tasks,
// which no claim takes, are left out like finished ones.
const sqlGaugeJobs = `SELECT queue, kind, state, run_at > ?1, failures > 0, count(*) FROM jobs
	WHERE state IN ('available', 'running', 'awaiting_input') AND (expires_at IS NULL OR expires_at > ?1)
	GROUP BY 1, 2, 3, 4, 5`

// sqlGaugeOldest is the run_at of the longest-waiting due job (the claim
// index's first entry).
const sqlGaugeOldest = `SELECT min(run_at) FROM jobs
	WHERE state = 'available' AND run_at <= ?1 AND (expires_at IS NULL OR expires_at > ?1)`

var _ backend.QueueGaugeSource = (*Store)(nil)

// Gauges implements backend.GaugeSource from one read transaction: the counts
// of tasks by status are summed from task_counts, which triggers keep
// (migration 007), so only the count of the unfinished jobs scans a table
// (jobs); its cost grows with the jobs kept, so callers scrape it every few
// seconds at most. It is bounded by Options.Timeout.
func (s *Store) Gauges(ctx context.Context) (backend.Gauges, error) {
	return s.gauges(ctx, true)
}

// QueueGauges implements backend.QueueGaugeSource: Gauges without the counts of
// tasks (Tasks is nil).
func (s *Store) QueueGauges(ctx context.Context) (backend.Gauges, error) {
	return s.gauges(ctx, false)
}

func (s *Store) gauges(ctx context.Context, tasks bool) (backend.Gauges, error) {
	snap := backend.Gauges{Jobs: map[backend.JobKey]int{}}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return backend.Gauges{}, wrapErr("gauges", err)
	}
	defer tx.Rollback()
	now := s.now()
	nowMs := now.UnixMilli()
	if tasks {
		snap.Tasks = map[task.Status]int{}
		if err := scanTaskCounts(ctx, tx, snap.Tasks); err != nil {
			return backend.Gauges{}, wrapErr("gauges", err)
		}
	}
	rows, err := tx.QueryContext(ctx, sqlGaugeJobs, nowMs)
	if err != nil {
		return backend.Gauges{}, wrapErr("gauges", err)
	}
	for rows.Next() {
		var queue, kind, state string
		var later, failed bool
		var n int
		if err := rows.Scan(&queue, &kind, &state, &later, &failed, &n); err != nil {
			rows.Close()
			return backend.Gauges{}, wrapErr("gauges", err)
		}
		snap.Jobs[backend.JobKey{Queue: queue, Kind: kind, State: opsdata.JobState(state, later, failed)}] += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return backend.Gauges{}, wrapErr("gauges", err)
	}
	var oldest sql.NullInt64
	if err := tx.QueryRowContext(ctx, sqlGaugeOldest, nowMs).Scan(&oldest); err != nil {
		return backend.Gauges{}, wrapErr("gauges", err)
	}
	if oldest.Valid {
		snap.OldestAvailable = now.Sub(time.UnixMilli(oldest.Int64))
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE ends_at > ?`, nowMs).Scan(&snap.Sessions); err != nil {
		return backend.Gauges{}, wrapErr("gauges", err)
	}
	return snap, nil
}

// scanTaskCounts adds the count of tasks by status, summed over the tools
// of task_counts, to into.
func scanTaskCounts(ctx context.Context, tx *sql.Tx, into map[task.Status]int) error {
	rows, err := tx.QueryContext(ctx, `SELECT status, sum(n) FROM task_counts GROUP BY status HAVING sum(n) > 0`)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskdata.CountBy(rows, into)
}
