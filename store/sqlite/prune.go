package sqlite

import (
	"context"
	"encoding/json"
	"time"
)

// PruneJobs implements backend.Pruner: it deletes at most limit job rows in
// state done (their tasks have finished; the task rows stay until their TTL
// passes) and returns how many. The steps of the task's history that the
// job row held (its last claim, and the attempt of a completion) are
// recorded as rows first, in the same transaction, so the history outlives
// the job. The freed pages are reused by later writes, so the file stops
// growing once pruning keeps up; it does not shrink (VACUUM does that). A
// fenced write for a pruned job finds no row and fails with
// backend.ErrLeaseLost, as for any finished job.
func (j jobStore) PruneJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	s := j.s
	if limit < 1 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		rows, err := tx.QueryContext(ctx, `SELECT j.task_id FROM jobs j JOIN tasks t ON t.id = j.task_id
			WHERE j.state = 'done' AND t.updated_at < ? LIMIT ?`, before.UnixMilli(), limit)
		if err != nil {
			return nil, wrapErr("prune jobs", err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, wrapErr("prune jobs", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return nil, wrapErr("prune jobs", err)
		}
		list, err := json.Marshal(ids)
		if err != nil {
			return nil, wrapErr("prune jobs", err)
		}
		for _, q := range []string{sqlPruneClaims, sqlPruneCompletions} {
			if _, err := tx.ExecContext(ctx, q, string(list)); err != nil {
				return nil, wrapErr("prune jobs: record history", err)
			}
		}
		res, err := tx.ExecContext(ctx, sqlPruneDelete, string(list))
		if err != nil {
			return nil, wrapErr("prune jobs", err)
		}
		k, err := res.RowsAffected()
		n = int(k)
		return nil, wrapErr("prune jobs", err)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
