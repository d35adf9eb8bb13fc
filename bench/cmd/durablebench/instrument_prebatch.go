//go:build taskwire_prebatch

package main

import "github.com/taskwire/taskwire/backend"

// instrument wraps the JobStore of st. This variant builds against taskwire
// sources that predate backend.BatchCompleter (commit 6808b81), for A/B
// runs.
func instrument(st backend.Store, stats *storeStats, skipCancelRead bool) backend.JobStore {
	return &instrumented{jobStore: st.Jobs().(jobStore), stats: stats, skipCancelRead: skipCancelRead}
}
