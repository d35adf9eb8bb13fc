//go:build !taskwire_prebatch

package main

import (
	"context"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// instrumentedBatch is instrumented for a store that completes in batches
// (backend.BatchCompleter), which the runtime then uses.
type instrumentedBatch struct {
	*instrumented
	bc backend.BatchCompleter
}

func (s *instrumentedBatch) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	t0 := time.Now()
	lost, err := s.bc.CompleteBatch(ctx, items)
	s.stats.completeBatch.add(len(items), time.Since(t0))
	return lost, err
}

// instrument wraps the JobStore of st, keeping its optional batch completion.
func instrument(st backend.Store, stats *storeStats, skipCancelRead bool) backend.JobStore {
	in := &instrumented{jobStore: st.Jobs().(jobStore), stats: stats, skipCancelRead: skipCancelRead}
	if bc, ok := st.Jobs().(backend.BatchCompleter); ok {
		return &instrumentedBatch{instrumented: in, bc: bc}
	}
	return in
}
