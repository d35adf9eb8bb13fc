package worker

import (
	"context"
	"time"
)

// Pruner is implemented by stores whose rows outlive their use:
// store/sqlite and store/postgres do. When Options.Store implements it, Run
// prunes on the cleanup schedule (Options.CleanupEvery, in batches of
// Options.CleanupBatch), next to Store.DeleteExpired, so that a long-running
// deployment keeps its tables bounded by its traffic over the retention
// horizons rather than by its age.
type Pruner interface {
	// PruneOutbox deletes at most limit outbox rows created before the
	// given time, oldest first, and returns how many.
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneJobs deletes at most limit job rows of finished tasks (job state
	// done), and returns how many. The task rows, which hold what clients
	// read, stay until their TTL passes; a finished job is read by
	// nothing.
	PruneJobs(ctx context.Context, limit int) (int, error)
}

// Maintenance transitions of pruning, as reported to Metrics.Maintenance.
const (
	// TransitionOutboxPruned: outbox rows older than
	// Options.OutboxRetention were deleted by Pruner.PruneOutbox.
	TransitionOutboxPruned Transition = "outbox_pruned"
	// TransitionJobPruned: job rows of finished tasks were deleted by
	// Pruner.PruneJobs.
	TransitionJobPruned Transition = "job_pruned"
)

// defaultOutboxRetention is the default Options.OutboxRetention.
const defaultOutboxRetention = time.Hour

// pruneOutbox is one Pruner.PruneOutbox call, with the retention horizon.
func (rt *Runtime) pruneOutbox(p Pruner) func(ctx context.Context, now time.Time, limit int) (int, error) {
	return func(ctx context.Context, now time.Time, limit int) (int, error) {
		return p.PruneOutbox(ctx, now.Add(-rt.opts.OutboxRetention), limit)
	}
}

// pruneJobs is one Pruner.PruneJobs call.
func pruneJobs(p Pruner) func(ctx context.Context, now time.Time, limit int) (int, error) {
	return func(ctx context.Context, _ time.Time, limit int) (int, error) { return p.PruneJobs(ctx, limit) }
}
