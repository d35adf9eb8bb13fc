package postgres

import (
	"context"

	"github.com/taskwire/taskwire/worker"
)

var _ worker.Pruner = (*Store)(nil)

// PruneJobs implements worker.Pruner: it deletes at most limit job rows in
// state done (their tasks have finished; the task rows stay until their TTL
// passes), skipping rows another pruner holds, and returns how many.
// Autovacuum makes the space of deleted rows reusable, so the table stops
// growing once pruning keeps up. A fenced write for a pruned job finds no
// row and fails with worker.ErrLeaseLost, as for any finished job.
func (s *Store) PruneJobs(ctx context.Context, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.q.ident+`.jobs WHERE task_id IN (
		SELECT task_id FROM `+s.q.ident+`.jobs WHERE state = 'done' LIMIT $1 FOR UPDATE SKIP LOCKED)`, limit)
	if err != nil {
		return 0, wrapErr("prune jobs", err)
	}
	return int(tag.RowsAffected()), nil
}
