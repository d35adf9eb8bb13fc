package worker

import (
	"context"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// Maintenance transitions of pruning, as reported to Metrics.Maintenance.
const (
	// TransitionOutboxPruned: outbox rows older than
	// Options.OutboxRetention were deleted by backend.Pruner.PruneOutbox.
	TransitionOutboxPruned Transition = "outbox_pruned"
	// TransitionJobPruned: job rows of tasks finished longer than
	// Options.JobRetention ago were deleted by backend.Pruner.PruneJobs.
	TransitionJobPruned Transition = "job_pruned"
)

// defaultOutboxRetention and defaultJobRetention are the defaults of
// Options.OutboxRetention and Options.JobRetention.
const (
	defaultOutboxRetention = time.Hour
	defaultJobRetention    = time.Hour
)

// pruneOutbox is one backend.Pruner.PruneOutbox call, with the retention horizon.
func (rt *Runtime) pruneOutbox(p backend.Pruner) func(ctx context.Context, now time.Time, limit int) (int, error) {
	return func(ctx context.Context, now time.Time, limit int) (int, error) {
		return p.PruneOutbox(ctx, now.Add(-rt.opts.OutboxRetention), limit)
	}
}

// pruneJobs is one backend.Pruner.PruneJobs call, with the retention horizon.
func (rt *Runtime) pruneJobs(p backend.Pruner) func(ctx context.Context, now time.Time, limit int) (int, error) {
	return func(ctx context.Context, now time.Time, limit int) (int, error) {
		return p.PruneJobs(ctx, now.Add(-rt.opts.JobRetention), limit)
	}
}
