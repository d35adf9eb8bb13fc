package postgres

import (
	"context"
	"sync"
	"time"
)

// Claims and table statistics.
//
// A claim walks the jobs_claim_queue index in order and stops at its limit, but
// the planner chooses that plan only when it has statistics on the jobs
// table. A table that was never analyzed (new, or filled by a burst before
// autovacuum's first pass, which can take a minute) looks to the planner
// like a few rows in random order, and it sorts every due job instead, so
// each claim costs time in proportion to the queue. The store therefore
// analyzes the jobs table itself, once, when it finds it holding at least
// claimStatsMinPages pages without ever having been analyzed; autovacuum
// keeps the statistics current afterwards.

const (
	// claimStatsMinPages is the size from which a never-analyzed jobs
	// table is analyzed (about 5,000 jobs).
	claimStatsMinPages = 64
	// claimStatsEvery bounds how often a claim checks.
	claimStatsEvery = 5 * time.Second
)

// claimStats runs the check at most every claimStatsEvery until the table
// has statistics.
type claimStats struct {
	mu      sync.Mutex
	done    bool
	checked time.Time
}

// ensureClaimStats analyzes the jobs table if it is large and has never
// been analyzed. It is cheap when there is nothing to do, and errors only
// cost the optimisation: they are logged, and the check is given up.
func (s *Store) ensureClaimStats(ctx context.Context) {
	c := &s.claimStats
	if !c.mu.TryLock() {
		return // another claim is checking
	}
	defer c.mu.Unlock()
	if c.done || time.Since(c.checked) < claimStatsEvery {
		return
	}
	c.checked = time.Now()
	var analyzed, large bool
	err := s.pool.QueryRow(ctx, `SELECT c.reltuples >= 0, pg_relation_size(c.oid) >= $2::bigint * current_setting('block_size')::bigint
		FROM pg_class c WHERE c.oid = to_regclass($1)`, s.q.ident+".jobs", claimStatsMinPages).Scan(&analyzed, &large)
	switch {
	case err != nil:
		s.log.Warn("postgres: checking the jobs table's statistics failed; leaving them to autovacuum", "err", err)
		c.done = true
	case analyzed:
		c.done = true
	case large:
		if _, err := s.pool.Exec(ctx, `ANALYZE `+s.q.ident+`.jobs`); err != nil {
			s.log.Warn("postgres: analyzing the jobs table failed; leaving it to autovacuum", "err", err)
		}
		c.done = true
	}
}
