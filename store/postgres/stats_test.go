package postgres

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// TestClaimAnalyzesNewJobsTable fills a never-analyzed jobs table past the
// threshold and checks that a claim gives it statistics, and that a small
// one is left alone.
//
// The table is filled in chunks of fillChunk jobs until it just passes
// claimStatsMinPages, not far beyond: one statement inserting 20,000 tasks
// and jobs took over a second alone and ran into the store's 5 s
// statement_timeout on a loaded machine. The store gets a Timeout long
// enough for a slow ANALYZE on such a machine; a claim that does not
// analyze still fails the test.
func TestClaimAnalyzesNewJobsTable(t *testing.T) {
	t.Parallel()
	const fillChunk = 1000
	ctx := ctxT(t)
	s := openWithHooks(t, Options{Schema: newSchema(t), Timeout: 30 * time.Second}, testHooks{})
	pages := func() int64 {
		t.Helper()
		var n int64
		if err := s.pool.QueryRow(ctx, `SELECT pg_relation_size(to_regclass($1)) / current_setting('block_size')::bigint`,
			s.q.ident+".jobs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	reltuples := func() float64 {
		t.Helper()
		var n float64
		if err := s.pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)`,
			s.q.ident+".jobs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fill := func(from, to int) {
		t.Helper()
		cc := creation(t, "acme", "echo", `{}`)
		_, err := s.pool.Exec(ctx, `WITH t AS (
				INSERT INTO `+s.q.ident+`.tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
					updated_at, ttl_ms, poll_interval_ms)
				SELECT 'fill-' || i, $1, 'acme', 'p', 'echo', 'working', $2, now(), now(), 0, 1000
				FROM generate_series($3::int, $4::int) AS i
				RETURNING id, kind, created_at)
			INSERT INTO `+s.q.ident+`.jobs (task_id, state, max_attempts, run_at, created_at, kind)
			SELECT id, 'available', 3, created_at, created_at, kind FROM t`,
			cc.Request.Endpoint, cc.Origin.Persisted(), from, to)
		if err != nil {
			t.Fatal(err)
		}
	}
	claim := func() {
		t.Helper()
		if _, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}

	fill(1, 10)
	claim()
	if n := reltuples(); n >= 0 {
		t.Fatalf("a small jobs table was analyzed (reltuples %v)", n)
	}
	for next := 11; pages() <= claimStatsMinPages; next += fillChunk {
		fill(next, next+fillChunk-1)
	}
	s.claimStats.checked = time.Time{} // the next claim checks again
	claim()
	if n := reltuples(); n < 1000 {
		t.Fatalf("after a claim, the jobs table's reltuples is %v, want the table analyzed", n)
	}
}
