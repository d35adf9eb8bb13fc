package sqlite

import (
	"context"
	"fmt"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// ReportProgress implements backend.ProgressReporter: under a live lease
// (else backend.ErrLeaseLost, changing nothing) it sets the task's status
// message and progress count (nil: none) without changing its status,
// records the change in the outbox and publishes it after commit.
func (j jobStore) ReportProgress(ctx context.Context, l backend.Lease, message string, p *task.Progress) error {
	s := j.s
	if err := storerules.CheckProgress(message, p); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	cur, total := progressArgs(p)
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		// The fence is the job's: a task whose job runs under this
		// lease is never terminal.
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET status_message = ?, progress = ?, progress_total = ?,
			updated_at = max(updated_at, ?)
			WHERE id = ? AND EXISTS (SELECT 1 FROM jobs WHERE `+fenceClause+`)`,
			message, cur, total, nowMs, l.TaskID, l.TaskID, l.Attempt, nowMs)
		if err != nil {
			return nil, wrapErr("report progress", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, wrapErr("report progress", err)
		} else if n == 0 {
			return nil, backend.ErrLeaseLost
		}
		if err := outbox(ctx, tx, l.TaskID, nowMs); err != nil {
			return nil, err
		}
		return []string{l.TaskID}, nil
	})
}

// progressArgs returns the column values of a progress count.
func progressArgs(p *task.Progress) (cur, total any) {
	if p == nil {
		return nil, nil
	}
	return p.Current, p.Total
}
