package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// completions accumulates what the completions of one write transaction
// add to the console's counters, so that each counter row is written once
// per transaction instead of once per task.
type completions struct {
	// counted are the working tasks completed under a claim of this
	// version, by kind: the task_counts trigger leaves them to flush
	// (migration 011).
	counted map[string]int64
	// n counts every completed task, for task_activity.
	n int64
}

// completeJob finishes the job of the live lease l (else
// backend.ErrLeaseLost, writing nothing) and completes its task with
// result and message, and with the progress count p when it is not nil
// (one UPDATE sets both), sets the job's checkpoint to checkpoint when it
// is not nil (with the job's own UPDATE), records the change in the outbox
// and counts it in acc.
func completeJob(ctx context.Context, tx *wtx, l backend.Lease, result, message string, p *task.Progress, checkpoint []byte,
	nowMs int64, acc *completions) error {
	var kind string
	var ours bool
	var err error
	if checkpoint == nil {
		err = tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'done', lease_owner = NULL, lease_expires_at = NULL
			WHERE `+fenceClause+` RETURNING kind, claimed_attempt IS attempt`, l.TaskID, l.Attempt, nowMs).Scan(&kind, &ours)
	} else {
		err = tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'done', lease_owner = NULL, lease_expires_at = NULL,
			checkpoint = ?, checkpoint_at = ? WHERE `+fenceClause+` RETURNING kind, claimed_attempt IS attempt`,
			checkpoint, nowMs, l.TaskID, l.Attempt, nowMs).Scan(&kind, &ours)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return backend.ErrLeaseLost
	}
	if err != nil {
		return wrapErr("update job", err)
	}
	set := `UPDATE tasks SET status = 'completed', status_message = ?, input_requests = NULL, result = ?, error = NULL,
		updated_at = max(updated_at, ?)`
	args := []any{message, result, nowMs}
	if p != nil {
		set += `, progress = ?, progress_total = ?`
		args = append(args, p.Current, p.Total)
	}
	args = append(args, l.TaskID)
	// Nearly always the task is working; one that is not (asked to
	// cancel while it waited for input) is counted by the trigger.
	res, err := tx.ExecContext(ctx, set+` WHERE id = ? AND status = 'working'`, args...)
	if err != nil {
		return wrapErr("end task", err)
	}
	switch n, err := res.RowsAffected(); {
	case err != nil:
		return wrapErr("end task", err)
	case n == 0:
		if _, err := tx.ExecContext(ctx, set+` WHERE id = ?`, args...); err != nil {
			return wrapErr("end task", err)
		}
	case ours:
		if acc.counted == nil {
			acc.counted = map[string]int64{}
		}
		acc.counted[kind]++
	}
	acc.n++
	return outbox(ctx, tx, l.TaskID, nowMs)
}

// flush adds the accumulated completions to task_counts (one statement
// per kind) and to the current minute of task_activity.
func (acc *completions) flush(ctx context.Context, tx *wtx, nowMs int64) error {
	for kind, n := range acc.counted {
		if _, err := tx.ExecContext(ctx, `INSERT INTO task_counts (kind, status, n) VALUES (?1, 'working', -?2),
			(?1, 'completed', ?2) ON CONFLICT (kind, status) DO UPDATE SET n = n + excluded.n`, kind, n); err != nil {
			return wrapErr("count completions", err)
		}
	}
	if acc.n == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO task_activity (minute, completed) VALUES (?, ?)
		ON CONFLICT (minute) DO UPDATE SET completed = completed + excluded.completed`, nowMs/60000, acc.n)
	return wrapErr("count completions", err)
}
