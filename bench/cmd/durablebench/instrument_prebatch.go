//go:build taskwire_prebatch

package main

// instrument wraps st. This variant builds against taskwire sources that
// predate backend.BatchCompleter (commit 6808b81), for A/B runs.
func instrument(st durableStore, stats *storeStats, skipCancelRead bool) durableStore {
	return &instrumented{durableStore: st, stats: stats, skipCancelRead: skipCancelRead}
}
