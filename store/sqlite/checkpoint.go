package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
)

// SaveCheckpoints implements backend.Checkpointer: in one immediate
// transaction (one commit, shared with the writes grouped with it), each
// item whose lease is live replaces its job's checkpoint and adds a
// checkpoint step, with the size, to the task's history; lost[i] reports
// an item whose lease was not live. The task does not change as a client
// sees it: no outbox row, nothing published. Invalid items fail the call
// before anything is written.
func (j jobStore) SaveCheckpoints(ctx context.Context, items []backend.CheckpointWrite) ([]bool, error) {
	s := j.s
	if err := storerules.CheckCheckpoints(items); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	lost := make([]bool, len(items))
	err := s.writeBatch(ctx, len(items), func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		for i, it := range items {
			var owner sql.NullString
			err := tx.QueryRowContext(ctx, `UPDATE jobs SET checkpoint = ?, checkpoint_at = ? WHERE `+fenceClause+`
				RETURNING lease_owner`, it.Data, nowMs, it.Lease.TaskID, it.Lease.Attempt, nowMs).Scan(&owner)
			if errors.Is(err, sql.ErrNoRows) {
				lost[i] = true
				continue
			}
			if err != nil {
				return nil, wrapErr("save checkpoint", err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO task_events (task_id, at, kind, attempt, worker, message)
				VALUES (?, ?, 'checkpoint', ?, ?, ?)`, it.Lease.TaskID, nowMs, it.Lease.Attempt, owner.String,
				backend.CheckpointMessage(len(it.Data))); err != nil {
				return nil, wrapErr("save checkpoint", err)
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return lost, nil
}
