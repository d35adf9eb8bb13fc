package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/opsdata"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// gaugeNow is the statements' clock: the injected time ($1) or the
// database's, in whole milliseconds like every other statement's.
const gaugeNow = `coalesce($1::timestamptz, date_trunc('milliseconds', now()))`

var _ backend.QueueGaugeSource = (*Store)(nil)

// Gauges implements backend.GaugeSource from one repeatable-read snapshot. It
// counts every task row (a scan of the tasks table: a counter row would
// serialize concurrent writers) and the unfinished jobs (a scan of the
// jobs table), so its cost grows with the store; callers scrape it every
// few seconds at most. Jobs of expired tasks, which no claim takes, are
// left out like finished ones. It is bounded by Options.Timeout.
func (s *Store) Gauges(ctx context.Context) (backend.Gauges, error) {
	return s.gauges(ctx, true)
}

// QueueGauges implements backend.QueueGaugeSource: Gauges without the scan of
// the tasks (Tasks is nil), so its cost grows with the jobs table only.
func (s *Store) QueueGauges(ctx context.Context) (backend.Gauges, error) {
	return s.gauges(ctx, false)
}

func (s *Store) gauges(ctx context.Context, tasks bool) (backend.Gauges, error) {
	snap := backend.Gauges{Jobs: map[backend.JobKey]int{}}
	if tasks {
		snap.Tasks = map[task.Status]int{}
	}
	now := s.now()
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			if tasks {
				if err := s.scanTaskCounts(ctx, tx, snap.Tasks); err != nil {
					return err
				}
			}
			rows, err := tx.Query(ctx, `SELECT queue, coalesce(kind, ''), state, run_at > `+gaugeNow+`, failures > 0, count(*)
				FROM `+s.q.ident+`.jobs
				WHERE state IN ('available', 'running', 'awaiting_input') AND (expires_at IS NULL OR expires_at > `+gaugeNow+`)
				GROUP BY 1, 2, 3, 4, 5`, now)
			if err != nil {
				return err
			}
			for rows.Next() {
				var queue, kind, state string
				var later, failed bool
				var n int
				if err := rows.Scan(&queue, &kind, &state, &later, &failed, &n); err != nil {
					rows.Close()
					return err
				}
				snap.Jobs[backend.JobKey{Queue: queue, Kind: kind, State: opsdata.JobState(state, later, failed)}] += n
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			var oldestMs, sessions int64
			if err := tx.QueryRow(ctx, `SELECT
				coalesce((SELECT (extract(epoch FROM `+gaugeNow+` - min(run_at)) * 1000)::bigint FROM `+s.q.ident+`.jobs
					WHERE state = 'available' AND run_at <= `+gaugeNow+` AND (expires_at IS NULL OR expires_at > `+gaugeNow+`)), 0),
				(SELECT count(*) FROM `+s.q.ident+`.sessions WHERE ends_at > (extract(epoch FROM `+gaugeNow+`) * 1000)::bigint)`,
				now).Scan(&oldestMs, &sessions); err != nil {
				return err
			}
			snap.OldestAvailable = time.Duration(oldestMs) * time.Millisecond
			snap.Sessions = int(sessions)
			return nil
		})
	if err != nil {
		return backend.Gauges{}, wrapErr("gauges", err)
	}
	return snap, nil
}

// scanTaskCounts adds the count of tasks by status to into.
func (s *Store) scanTaskCounts(ctx context.Context, tx pgx.Tx, into map[task.Status]int) error {
	rows, err := tx.Query(ctx, `SELECT status, count(*) FROM `+s.q.ident+`.tasks GROUP BY status`)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskdata.CountBy(rows, into)
}
