package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
)

// Saves the checkpoints of fenced jobs: $2 task IDs, $3 attempts, $4
// checkpoints; no task may appear twice. Each job saved adds a checkpoint
// step to its task's history, with the size (task_event_add_at keeps the
// bound of 200 rows per task); the statement returns the positions in the
// batch (from 1) of the items saved. The jobs are found by primary key
// from the batch's IDs and each row's item by its position, as in
// sqlCompleteBatch, and the function runs in a subquery whose output is
// read, so it runs once per saved job.
const sqlSaveCheckpoints = `WITH u AS (
		UPDATE {{schema}}.jobs j SET checkpoint = ($4::bytea[])[array_position($2::text[], j.task_id)],
			checkpoint_at = {{now}}
		WHERE j.task_id = ANY($2::text[]) AND j.state = 'running' AND j.lease_expires_at > {{now}}
			AND j.attempt = ($3::bigint[])[array_position($2::text[], j.task_id)]
		RETURNING j.task_id, j.attempt, j.lease_owner, octet_length(j.checkpoint) AS n,
			array_position($2::text[], j.task_id) AS i)
	SELECT i FROM (SELECT u.i, {{schema}}.task_event_add_at(u.task_id, {{now}}, 'checkpoint', u.attempt, u.lease_owner,
		u.n || ' bytes', NULL) FROM u) s`

// SaveCheckpoints implements backend.Checkpointer: in one transaction, each
// item whose lease is live replaces its job's checkpoint and adds a
// checkpoint step, with the size, to the task's history; lost[i] reports an
// item whose lease was not live. Items run in rounds of distinct tasks, in
// order, so that a task named twice keeps its last checkpoint. The job
// rows are locked as by every fenced write; the task does not change as a
// client sees it: no outbox row, nothing published. Invalid items fail the
// call before anything is written.
func (j jobStore) SaveCheckpoints(ctx context.Context, items []backend.CheckpointWrite) ([]bool, error) {
	s := j.s
	if err := storerules.CheckCheckpoints(items); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	lost := make([]bool, len(items))
	if len(items) == 0 {
		return lost, nil
	}
	q := s.q.expand(sqlSaveCheckpoints)
	err := s.inTx(ctx, func(tx pgx.Tx) ([]event, error) {
		now := s.now()
		for _, round := range checkpointRounds(items) {
			ids := make([]string, len(round))
			attempts := make([]int64, len(round))
			data := make([][]byte, len(round))
			for k, i := range round {
				ids[k], attempts[k], data[k] = items[i].Lease.TaskID, items[i].Lease.Attempt, items[i].Data
				lost[i] = true
			}
			rows, err := tx.Query(ctx, q, now, ids, attempts, data)
			if err != nil {
				return nil, wrapErr("save checkpoints", err)
			}
			var pos int32
			_, err = pgx.ForEachRow(rows, []any{&pos}, func() error {
				lost[round[pos-1]] = false
				return nil
			})
			if err != nil {
				return nil, wrapErr("save checkpoints", err)
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return lost, nil
}

// checkpointRounds splits the indexes of items into rounds in which no
// task appears twice, keeping the order of each task's items.
func checkpointRounds(items []backend.CheckpointWrite) [][]int {
	var rounds [][]int
	seen := map[string]int{} // task → rounds it appears in
	for i, it := range items {
		r := seen[it.Lease.TaskID]
		seen[it.Lease.TaskID] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds
}
