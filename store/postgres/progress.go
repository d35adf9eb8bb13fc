package postgres

import (
	"context"
	"fmt"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// ReportProgress implements backend.ProgressReporter: under a live lease
// (else backend.ErrLeaseLost, changing nothing) it sets the task's status
// message and progress count (nil: none) without changing its status, in
// one statement that records the change in the outbox; the change is
// published after commit.
func (j jobStore) ReportProgress(ctx context.Context, l backend.Lease, message string, p *task.Progress) error {
	s := j.s
	if err := storerules.CheckProgress(message, p); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	cur, total := progressArgs(p)
	ev, err := fencedEvent(ctx, s.pool, "report progress", s.q.reportProgress, s.now(), l.TaskID, l.Attempt,
		message, cur, total)
	if err != nil {
		return err
	}
	s.emit(ev)
	return nil
}

// progressArgs returns the column values of a progress count.
func progressArgs(p *task.Progress) (cur, total *float64) {
	if p == nil {
		return nil, nil
	}
	return &p.Current, &p.Total
}
