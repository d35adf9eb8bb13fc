package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/taskwire/taskwire/store/gauges"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// sqlGaugeJobs counts the jobs that have not finished by kind, in the
// states of gauges.JobState: due, not due after a failed run, not due
// without one, running, parked for input. Jobs of expired tasks, which no
// claim takes, are left out like finished ones. It groups by the kind
// alone, so SQLite sorts the rows by one key, not four: about a fifth
// less time than grouping by state, due and failed as well.
const sqlGaugeJobs = `SELECT kind, sum(state = 'available' AND run_at <= ?1),
	sum(state = 'available' AND run_at > ?1 AND failures > 0), sum(state = 'available' AND run_at > ?1 AND failures = 0),
	sum(state = 'running'), sum(state = 'awaiting_input') FROM jobs
	WHERE state IN ('available', 'running', 'awaiting_input') AND (expires_at IS NULL OR expires_at > ?1)
	GROUP BY kind`

// sqlGaugeOldest is the run_at of the longest-waiting due job (the claim
// index's first entry).
const sqlGaugeOldest = `SELECT min(run_at) FROM jobs
	WHERE state = 'available' AND run_at <= ?1 AND (expires_at IS NULL OR expires_at > ?1)`

// jobCounts is one row of sqlGaugeJobs: a kind and how many of its jobs
// are in each state.
type jobCounts struct {
	Kind                                               string
	Available, RetryWaiting, Scheduled, Running, Input int
}

// Add adds the row's non-zero counts to into (a Snapshot's missing key is
// zero).
func (c jobCounts) Add(into map[gauges.Job]int) {
	for _, s := range []struct {
		state gauges.JobState
		n     int
	}{
		{gauges.JobAvailable, c.Available}, {gauges.JobRetryWaiting, c.RetryWaiting},
		{gauges.JobScheduled, c.Scheduled}, {gauges.JobRunning, c.Running}, {gauges.JobInputWaiting, c.Input},
	} {
		if s.n > 0 {
			into[gauges.Job{Kind: c.Kind, State: s.state}] += s.n
		}
	}
}

var _ gauges.QueueSource = (*Store)(nil)

// Gauges implements gauges.Source from one read transaction: the counts
// of tasks by status are summed from task_counts, which triggers keep
// (migration 007), so only the count of the unfinished jobs scans a table
// (jobs); its cost grows with the jobs kept, so callers scrape it every few
// seconds at most. It is bounded by Options.Timeout.
func (s *Store) Gauges(ctx context.Context) (gauges.Snapshot, error) {
	return s.gauges(ctx, true)
}

// QueueGauges implements gauges.QueueSource: Gauges without the counts of
// tasks (Tasks is nil).
func (s *Store) QueueGauges(ctx context.Context) (gauges.Snapshot, error) {
	return s.gauges(ctx, false)
}

func (s *Store) gauges(ctx context.Context, tasks bool) (gauges.Snapshot, error) {
	snap := gauges.Snapshot{Jobs: map[gauges.Job]int{}}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return gauges.Snapshot{}, wrapErr("gauges", err)
	}
	defer tx.Rollback()
	now := s.now()
	nowMs := now.UnixMilli()
	if tasks {
		snap.Tasks = map[task.Status]int{}
		if err := scanTaskCounts(ctx, tx, snap.Tasks); err != nil {
			return gauges.Snapshot{}, wrapErr("gauges", err)
		}
	}
	rows, err := tx.QueryContext(ctx, sqlGaugeJobs, nowMs)
	if err != nil {
		return gauges.Snapshot{}, wrapErr("gauges", err)
	}
	for rows.Next() {
		var c jobCounts
		if err := rows.Scan(&c.Kind, &c.Available, &c.RetryWaiting, &c.Scheduled, &c.Running, &c.Input); err != nil {
			rows.Close()
			return gauges.Snapshot{}, wrapErr("gauges", err)
		}
		c.Add(snap.Jobs)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return gauges.Snapshot{}, wrapErr("gauges", err)
	}
	var oldest sql.NullInt64
	if err := tx.QueryRowContext(ctx, sqlGaugeOldest, nowMs).Scan(&oldest); err != nil {
		return gauges.Snapshot{}, wrapErr("gauges", err)
	}
	if oldest.Valid {
		snap.OldestAvailable = now.Sub(time.UnixMilli(oldest.Int64))
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE ends_at > ?`, nowMs).Scan(&snap.Sessions); err != nil {
		return gauges.Snapshot{}, wrapErr("gauges", err)
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
