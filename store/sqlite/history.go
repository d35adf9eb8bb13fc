package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// The history of a task (the console's timeline) is kept in two parts
// (migration 011): the rows of task_events, and the steps the task and job
// rows hold — the creation time, the job's current claim (claimed_at,
// claimed_by, claimed_attempt) and the completion. Operator.Task merges
// them with storerules.MergeHistory; PruneJobs turns the job's part into
// rows before it deletes the job.

// operatorJob reads the job of task id in tx, with the claim it names as
// a claimed step (nil when the job row cannot attribute one: no claim, or
// a claim of a process older than migration 011). It returns nil, nil,
// nil when the task has no job row.
func operatorJob(ctx context.Context, tx *sql.Tx, id string) (*backend.JobInfo, *backend.TaskEvent, error) {
	var j backend.JobInfo
	var runAt int64
	var owner, claimedBy sql.NullString
	var leaseExp, claimedAt, claimedAttempt, checkpointAt sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT state, attempt, failures, max_attempts, interrupted_runs, input_rounds, run_at,
		lease_owner, lease_expires_at, claimed_at, claimed_by, claimed_attempt, coalesce(length(checkpoint), 0),
		checkpoint_at FROM jobs WHERE task_id = ?`, id).
		Scan(&j.State, &j.Attempt, &j.Failures, &j.MaxAttempts, &j.InterruptedRuns, &j.InputRounds, &runAt, &owner,
			&leaseExp, &claimedAt, &claimedBy, &claimedAttempt, &j.CheckpointBytes, &checkpointAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, wrapErr("operator task job", err)
	}
	j.RunAt, j.Worker = time.UnixMilli(runAt).UTC(), owner.String
	if leaseExp.Valid {
		j.LeaseExpires = time.UnixMilli(leaseExp.Int64).UTC()
	}
	if checkpointAt.Valid && j.CheckpointBytes > 0 {
		j.CheckpointAt = time.UnixMilli(checkpointAt.Int64).UTC()
	}
	var claim *backend.TaskEvent
	if j.Attempt > 0 && claimedAt.Valid && claimedAttempt.Valid && claimedAttempt.Int64 == j.Attempt {
		claim = &backend.TaskEvent{At: time.UnixMilli(claimedAt.Int64).UTC(), Kind: backend.EventClaimed,
			Attempt: j.Attempt, Worker: claimedBy.String}
	}
	return &j, claim, nil
}

// operatorEvents reads the task_events rows of task id in tx, in write
// order.
func operatorEvents(ctx context.Context, tx *sql.Tx, id string) ([]backend.TaskEvent, error) {
	rows, err := tx.QueryContext(ctx, `SELECT at, kind, attempt, worker, message, category, run_at FROM task_events
		WHERE task_id = ? ORDER BY id DESC LIMIT ?`, id, backend.MaxTaskEvents)
	if err != nil {
		return nil, wrapErr("operator task events", err)
	}
	defer rows.Close()
	var evs []backend.TaskEvent
	for rows.Next() {
		var e backend.TaskEvent
		var at int64
		var runAt sql.NullInt64
		var kind, category string
		if err := rows.Scan(&at, &kind, &e.Attempt, &e.Worker, &e.Message, &category, &runAt); err != nil {
			return nil, wrapErr("operator task events", err)
		}
		e.At, e.Kind = time.UnixMilli(at).UTC(), backend.TaskEventKind(kind)
		e.Category = backend.FailureCategory(category).Recorded()
		if runAt.Valid {
			e.RunAt = time.UnixMilli(runAt.Int64).UTC()
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("operator task events", err)
	}
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	return evs, nil
}

// Statements of PruneJobs, on the task IDs of a JSON array ?1: the claim
// each job names (as Operator.Task derives it) and, for a completed task
// without a completed row (one written before migration 011), its
// completion become rows; then the jobs are deleted.
const (
	sqlPruneClaims = `INSERT INTO task_events (task_id, at, kind, attempt, worker)
		SELECT task_id, claimed_at, 'claimed', attempt, coalesce(claimed_by, '') FROM jobs
		WHERE task_id IN (SELECT value FROM json_each(?1))
		AND attempt > 0 AND claimed_attempt = attempt AND claimed_at IS NOT NULL`
	sqlPruneCompletions = `INSERT INTO task_events (task_id, at, kind, attempt, message)
		SELECT t.id, t.updated_at, 'completed', j.attempt, t.status_message FROM jobs j JOIN tasks t ON t.id = j.task_id
		WHERE j.task_id IN (SELECT value FROM json_each(?1)) AND t.status = 'completed'
		AND NOT EXISTS (SELECT 1 FROM task_events e WHERE e.task_id = t.id AND e.kind = 'completed')`
	sqlPruneDelete = `DELETE FROM jobs WHERE task_id IN (SELECT value FROM json_each(?1))`
)
