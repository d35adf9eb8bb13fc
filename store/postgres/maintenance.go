package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// RescueExpired implements backend.JobStore. It takes at most p.Limit running
// jobs whose lease expired at or before p.Now, earliest expiry first (then
// task ID), skipping rows another rescuer holds, and counts an interrupted
// run for each: a job whose interrupted runs reach p.MaxInterruptedRuns
// fails its task with the client-safe error
// {"code":-32603,"message":"The task failed after repeated attempts."};
// the others become available again with their run_at unchanged, so they
// are claimed before the jobs queued after them, and their next claim gets
// a new attempt. Handler failures (failures, max_attempts) are not touched.
// A zero p.Now means the store's clock.
func (j jobStore) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	s := j.s
	if p.Limit < 1 {
		return 0, nil
	}
	var n int
	var outboxIDs []int64
	var failed []string
	err := s.pool.QueryRow(ctx, s.q.rescue, s.at(p.Now), p.Limit, exhaustedJSON, max(p.MaxInterruptedRuns, 1)).
		Scan(&n, &outboxIDs, &failed)
	if err != nil {
		return 0, wrapErr("rescue", err)
	}
	for i, id := range failed {
		s.emit(event{id: outboxIDs[i], taskID: id})
	}
	return n, nil
}

// DeleteExpired implements backend.JobStore. It deletes at most limit tasks
// whose TTL passed at or before now, earliest expiry first (then task ID),
// with their jobs. Their outbox rows stay until PruneOutbox. A zero now
// means the store's clock.
func (j jobStore) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, s.q.deleteExpired, s.at(now), limit)
	if err != nil {
		return 0, wrapErr("delete expired", err)
	}
	return int(tag.RowsAffected()), nil
}

// PruneOutbox deletes at most limit outbox rows created before the given
// time, oldest first, and returns how many. It looks at the limit oldest
// rows (by ID, which follows creation up to concurrent commits), so a call
// that deletes fewer than limit rows may leave a few rows created before the
// horizon behind a newer one, for a later call. The outbox records every
// observable change; listeners read it to catch up on the notifications
// they missed while disconnected. Every worker runtime calls it with a
// horizon of worker.Options.OutboxRetention, which should be longer than
// any outage the listeners should bridge. It also
// deletes the console chart's completion counts older than the chart's
// window (backend.MaxActivityWindow).
func (j jobStore) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, s.q.pruneOutbox, before.Truncate(time.Millisecond), limit)
	if err != nil {
		return 0, wrapErr("prune outbox", err)
	}
	// The chart's counters go with the outbox: a few rows per node and
	// minute.
	if _, err := s.pool.Exec(ctx, s.q.pruneActivity, s.clock().Add(-backend.MaxActivityWindow-time.Minute)); err != nil {
		return 0, wrapErr("prune activity counts", err)
	}
	return int(tag.RowsAffected()), nil
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
	// SchemaVersion is the schema's version.
	SchemaVersion int
}

// Stats counts the store's rows from one repeatable-read snapshot.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Tasks: map[task.Status]int{}, Jobs: map[string]int{}}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			if err := countBy(ctx, tx, `SELECT status, count(*) FROM `+s.q.ident+`.tasks GROUP BY status`,
				st.Tasks); err != nil {
				return err
			}
			if err := countBy(ctx, tx, `SELECT state, count(*) FROM `+s.q.ident+`.jobs GROUP BY state`,
				st.Jobs); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(max(id), 0) FROM `+s.q.ident+`.outbox`).
				Scan(&st.Outbox, &st.LastOutboxID); err != nil {
				return err
			}
			v, err := s.version(ctx, tx)
			st.SchemaVersion = v
			return err
		})
	if err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	return st, nil
}

// countBy adds the rows of a grouped count query to into.
func countBy[K ~string](ctx context.Context, tx pgx.Tx, query string, into map[K]int) error {
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskdata.CountBy(rows, into)
}
