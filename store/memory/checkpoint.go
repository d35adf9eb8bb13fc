package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// SaveCheckpoints implements backend.Checkpointer: item by item, each
// item whose lease is live replaces its job's checkpoint with a copy of its
// data and records a checkpoint step in the task's history; lost[i]
// reports an item whose lease was not live. The task does not change as a
// client sees it, so nothing is published. Invalid items fail the call
// before anything changes.
func (s jobStore) SaveCheckpoints(ctx context.Context, items []backend.CheckpointWrite) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := storerules.CheckCheckpoints(items); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	lost := make([]bool, len(items))
	for i, it := range items {
		data := slices.Clone(it.Data)
		_, err := s.m.fencedChange(it.Lease, func(e *entry, now time.Time) (*task.Params, func(), error) {
			return nil, func() { e.job.checkpoint, e.job.checkpointAt, e.job.saved = data, now, len(data) }, nil
		})
		lost[i] = err != nil // fencedChange fails only with backend.ErrLeaseLost here
	}
	return lost, nil
}

// progressOf returns a copy of t's progress count, nil when it has none.
func progressOf(t task.Task) *task.Progress {
	p, ok := t.Progress()
	if !ok {
		return nil
	}
	return &p
}
