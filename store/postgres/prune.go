package postgres

import (
	"context"
	"time"
)

// PruneJobs implements backend.Pruner: it deletes at most limit job rows in
// state done (their tasks have finished; the task rows stay until their TTL
// passes), skipping rows another pruner holds, and returns how many.
// Autovacuum makes the space of deleted rows reusable, so the table stops
// growing once pruning keeps up. A fenced write for a pruned job finds no
// row and fails with backend.ErrLeaseLost, as for any finished job. The
// horizon counts in whole milliseconds, as stored times do.
func (j jobStore) PruneJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.q.ident+`.jobs WHERE task_id IN (
		SELECT j.task_id FROM `+s.q.ident+`.jobs j JOIN `+s.q.ident+`.tasks t ON t.id = j.task_id
		WHERE j.state = 'done' AND t.updated_at < $1 LIMIT $2 FOR UPDATE OF j SKIP LOCKED)`, before.Truncate(time.Millisecond), limit)
	if err != nil {
		return 0, wrapErr("prune jobs", err)
	}
	return int(tag.RowsAffected()), nil
}
