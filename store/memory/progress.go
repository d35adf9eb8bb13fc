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

// ReportProgress implements backend.ProgressReporter: under a live lease it
// sets the task's status message and progress count (nil: none) without
// changing its status, and publishes the change. A message that is not
// storable text or longer than backend.MaxProgressMessage, and numbers that
// are not finite and non-negative, fail before anything changes.
func (s jobStore) ReportProgress(ctx context.Context, l backend.Lease, message string, p *task.Progress) error {
	if err := storerules.CheckProgress(message, p); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return s.m.fenced(ctx, l, func(e *entry, _ time.Time) (*task.Params, func(), error) {
		q := e.snap.Params()
		q.StatusMessage, q.Progress = message, p
		return &q, nil, nil
	})
}

// CompleteBatch implements backend.BatchCompleter: it completes every item
// under its own fence, under one lock. lost[i] reports that item i's lease
// was not live, and nothing was changed for it. An item's Progress, when
// set, becomes its task's progress count, and its Checkpoint its job's
// checkpoint (without a history step). An invalid item (no result, a
// message that is not storable text, invalid progress numbers) fails the
// whole batch before anything changes.
func (s jobStore) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, it := range items {
		if it.Result == nil {
			return nil, fmt.Errorf("memory: batch item %d: a result is required", i)
		}
		if err := storerules.CheckCompletion(it); err != nil {
			return nil, fmt.Errorf("memory: batch item %d: %w", i, err)
		}
	}
	m := s.m
	lost := make([]bool, len(items))
	type write struct {
		e     *entry
		snap  task.Task
		apply func()
		// checkpoint is the item's checkpoint, nil: none.
		checkpoint []byte
	}
	writes := make([]write, 0, len(items))
	seen := map[string]bool{}
	m.mu.Lock()
	for i, it := range items {
		e, _, err := m.fencedLocked(it.Lease)
		if err != nil || seen[it.Lease.TaskID] {
			lost[i] = true // a second item of the same lease finds it ended
			continue
		}
		seen[it.Lease.TaskID] = true
		p, apply := end(e, task.Completed, it.Message, it.Result, nil)
		if it.Progress != nil {
			c := *it.Progress
			p.Progress = &c
		}

		p.LastUpdatedAt = m.later(p.LastUpdatedAt)
		snap, err := task.New(*p)
		if err != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("memory: batch item %d: %w", i, err)
		}
		writes = append(writes, write{e, snap, apply, slices.Clone(it.Checkpoint)})
	}
	now := m.now()
	for _, w := range writes { // every snapshot is valid: commit them all
		b := w.e.mark()
		w.e.snap = w.snap
		w.apply()
		if w.checkpoint != nil {
			w.e.job.checkpoint, w.e.job.checkpointAt = w.checkpoint, now
		}
		w.e.observe(b, now)
	}
	m.mu.Unlock()
	for _, w := range writes {
		m.publisher.Publish(w.snap.ID())
	}
	return lost, nil
}
