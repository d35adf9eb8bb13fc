package postgres

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// TestDeletedTasksTakeTheirRows checks migration 014: nothing references
// tasks by a foreign key (so that creating a task checks none), and a
// deleted task's job and history rows still go with it, by the statement
// trigger, for every way a task is deleted.
func TestDeletedTasksTakeTheirRows(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)

	var fks []string
	rows, err := s.pool.Query(ctx, `SELECT conrelid::regclass::text || ' ' || conname FROM pg_constraint
		WHERE contype = 'f' AND confrelid = to_regclass($1)`, s.q.ident+".tasks")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var fk string
		if err := rows.Scan(&fk); err != nil {
			t.Fatal(err)
		}
		fks = append(fks, fk)
	}
	if rows.Close(); rows.Err() != nil || len(fks) > 0 {
		t.Fatalf("foreign keys to tasks: %v (%v)", fks, rows.Err())
	}

	// Three tasks with history rows: each retried once (a retry row) and
	// claimed again (the earlier claim becomes a row).
	var ids []string
	for range 3 {
		snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{MaxAttempts: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, snap.ID())
	}
	for range 2 {
		jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 3, Lease: time.Minute})
		if err != nil || len(jobs) != 3 {
			t.Fatalf("Claim = %d jobs, %v", len(jobs), err)
		}
		for _, j := range jobs {
			if err := s.Jobs().Retry(ctx, j.Lease, time.Time{}, "again", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(table string) int {
		t.Helper()
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.q.ident+`.`+table+` WHERE task_id = ANY($1)`, ids).
			Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if jobs, events := count("jobs"), count("task_events"); jobs != 3 || events < 6 {
		t.Fatalf("before deletion: %d jobs, %d history rows; want 3 and at least 6", jobs, events)
	}

	// An expired key holder is deleted by sqlDeleteHolder, the others by
	// DeleteExpired.
	if _, err := s.pool.Exec(ctx, s.q.deleteHolder, ids[0]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(DefaultTTL)
	if n, err := s.Jobs().DeleteExpired(ctx, time.Time{}, 10); n != 2 || err != nil {
		t.Fatalf("DeleteExpired = %d, %v; want 2", n, err)
	}
	if jobs, events := count("jobs"), count("task_events"); jobs != 0 || events != 0 {
		t.Errorf("after deletion: %d jobs, %d history rows left", jobs, events)
	}
}
