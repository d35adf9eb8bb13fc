package postgres

import (
	"context"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// RescueExpired implements backend.JobStore. It takes at most p.Limit running
// jobs whose lease expired at or before p.Now, earliest expiry first (then
// task ID), skipping rows another rescuer holds, and counts an interrupted
// run for each: a job whose interrupted runs reach p.MaxInterruptedRuns
// fails its task with the client-safe error
// {"code":-32603,"message":"The task failed after repeated attempts."};
// the others become available again with their run_at unchanged, so they
// are claimed before the jobs queued after them, and their next claim gets
// a new attempt. Their task's status message becomes
// backend.InterruptedMessage (when it was another), with an outbox row.
// Handler failures (failures, max_attempts) are not touched.
// A zero p.Now means the store's clock.
func (j jobStore) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	return j.s.rescue(ctx, j.s.q.rescue, p)
}

// rescue runs one rescue statement (queries.rescue, queries.rescueDead)
// with p and the extra arguments, and publishes the tasks it changed.
func (s *Store) rescue(ctx context.Context, query string, p backend.RescueParams, extra ...any) (int, error) {
	if p.Limit < 1 {
		return 0, nil
	}
	var n int
	var outboxIDs []int64
	var changed []string
	args := append([]any{s.at(p.Now), p.Limit, exhaustedJSON, max(p.MaxInterruptedRuns, 1), backend.InterruptedMessage},
		extra...)
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&n, &outboxIDs, &changed); err != nil {
		return 0, wrapErr("rescue", err)
	}
	for i, id := range changed {
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
