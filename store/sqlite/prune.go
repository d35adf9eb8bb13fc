package sqlite

import (
	"context"
	"time"
)

// PruneJobs implements backend.Pruner: it deletes at most limit job rows in
// state done (their tasks have finished; the task rows stay until their TTL
// passes) and returns how many. The freed pages are reused by later writes,
// so the file stops growing once pruning keeps up; it does not shrink
// (VACUUM does that). A fenced write for a pruned job finds no row and
// fails with backend.ErrLeaseLost, as for any finished job.
func (j jobStore) PruneJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	return s.deleteRows(ctx, "prune jobs", `DELETE FROM jobs WHERE task_id IN (
		SELECT j.task_id FROM jobs j JOIN tasks t ON t.id = j.task_id
		WHERE j.state = 'done' AND t.updated_at < ? LIMIT ?)`, before.UnixMilli(), limit)
}
