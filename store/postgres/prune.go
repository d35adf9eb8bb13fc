package postgres

import (
	"context"
	"time"
)

// PruneJobs implements backend.Pruner: it deletes at most limit job rows in
// state done (their tasks have finished; the task rows stay until their TTL
// passes), skipping rows another pruner holds, and returns how many. The
// steps of the history a job row holds (its current claim and, for a
// completed task, the completion; migration 013) are written as
// task_events rows in the same statement, so the history outlives the job.
// Autovacuum makes the space of deleted rows reusable, so the table stops
// growing once pruning keeps up. A fenced write for a pruned job finds no
// row and fails with backend.ErrLeaseLost, as for any finished job. The
// horizon counts in whole milliseconds, as stored times do.
func (j jobStore) PruneJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	var n int
	err := s.pool.QueryRow(ctx, s.q.pruneJobs, before.Truncate(time.Millisecond), limit).Scan(&n)
	if err != nil {
		return 0, wrapErr("prune jobs", err)
	}
	return n, nil
}
