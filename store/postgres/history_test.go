package postgres

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/storetest"
)

// step is what TestHistory* compare of a backend.TaskEvent.
type step struct {
	Kind    backend.TaskEventKind
	Attempt int64
	Worker  string
}

func steps(evs []backend.TaskEvent) []step {
	out := make([]step, len(evs))
	for i, e := range evs {
		out[i] = step{e.Kind, e.Attempt, e.Worker}
	}
	return out
}

var okResult = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}

// eventRows counts the task_events rows of a task.
func eventRows(t *testing.T, s *Store, id string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(ctxT(t), `SELECT count(*) FROM `+s.q.ident+`.task_events WHERE task_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHistoryOfTheCommonLife: a task created, claimed once and completed
// in a batch writes no history rows (migration 013), its timeline is
// derived in full, and it survives PruneJobs, which writes the steps the
// job row held.
func TestHistoryOfTheCommonLife(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := openStore(t, newSchema(t), nil)
	tk, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{"n":1}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w1", Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	lost, err := s.Jobs().(backend.BatchCompleter).CompleteBatch(ctx, []backend.Completion{{Lease: jobs[0].Lease, Result: okResult}})
	if err != nil || lost[0] {
		t.Fatalf("CompleteBatch = %v, %v", lost, err)
	}
	if n := eventRows(t, s, tk.ID()); n != 0 {
		t.Errorf("%d history rows written, want 0", n)
	}
	want := []step{{Kind: backend.EventCreated}, {backend.EventClaimed, 1, "w1"}, {Kind: backend.EventCompleted, Attempt: 1}}
	before, err := s.Operator().Task(ctx, tk.ID())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, steps(before.Events)); d != "" {
		t.Fatalf("history (-want +got):\n%s", d)
	}
	if n, err := s.Jobs().(backend.Pruner).PruneJobs(ctx, time.Now().Add(time.Hour), 10); n != 1 || err != nil {
		t.Fatalf("PruneJobs = %d, %v", n, err)
	}
	after, err := s.Operator().Task(ctx, tk.ID())
	if err != nil {
		t.Fatal(err)
	}
	if after.Job != nil {
		t.Errorf("job %+v survived PruneJobs", after.Job)
	}
	if d := cmp.Diff(before.Events, after.Events); d != "" {
		t.Errorf("history after PruneJobs (-before +after):\n%s", d)
	}
}

// TestHistoryAcrossMigration013: steps recorded as rows by version 12's
// triggers, and claims made by a version 12 node during the rollout, are
// read after the upgrade without gaps or duplicates.
func TestHistoryAcrossMigration013(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	old, pool := storeAtVersion(t, 12)
	schema := old.opts.Schema
	insertV12 := func(id string) {
		t.Helper()
		cc := creation(t, "acme", "echo", `{"n":1}`)
		_, err := pool.Exec(ctx, `WITH t AS (
				INSERT INTO `+old.q.ident+`.tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
					updated_at, expires_at, ttl_ms, poll_interval_ms)
				VALUES ($1, $2, 'acme', 'p', 'echo', 'working', $3, now(), now(), now() + interval '1 hour', 3600000, 1000)
				RETURNING id, kind, created_at, expires_at)
			INSERT INTO `+old.q.ident+`.jobs (task_id, state, max_attempts, run_at, created_at, kind, expires_at)
			SELECT id, 'available', 3, created_at, created_at, kind, expires_at FROM t`, id, cc.Request.Endpoint, cc.Origin.Persisted())
		if err != nil {
			t.Fatalf("version 12 insert: %v", err)
		}
	}
	claimV12 := func(id string) backend.Lease {
		t.Helper()
		var l backend.Lease
		err := pool.QueryRow(ctx, `UPDATE `+old.q.ident+`.jobs SET state = 'running', attempt = attempt + 1,
			lease_owner = 'old', lease_expires_at = now() + interval '1 minute' WHERE task_id = $1
			RETURNING task_id, attempt`, id).Scan(&l.TaskID, &l.Attempt)
		if err != nil {
			t.Fatalf("version 12 claim: %v", err)
		}
		return l
	}
	insertV12("before")
	lBefore := claimV12("before")
	insertV12("rollout")

	s := openStore(t, schema, nil)  // migrates to the current version
	lRollout := claimV12("rollout") // a version 12 node, after the migration
	if _, err := s.Jobs().(backend.BatchCompleter).CompleteBatch(ctx, []backend.Completion{{Lease: lBefore, Result: okResult}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs().Retry(ctx, lRollout, time.Now(), "", ""); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "new", Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	for _, tt := range []struct {
		id   string
		want []step
	}{
		{"before", []step{{Kind: backend.EventCreated}, {backend.EventClaimed, 1, "old"}, {Kind: backend.EventCompleted, Attempt: 1}}},
		{"rollout", []step{{Kind: backend.EventCreated}, {backend.EventClaimed, 1, "old"}, {backend.EventRetry, 1, "old"},
			{backend.EventClaimed, 2, "new"}}},
	} {
		ot, err := s.Operator().Task(ctx, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, steps(ot.Events)); d != "" {
			t.Errorf("%s: history (-want +got):\n%s", tt.id, d)
		}
	}
}

// TestActivityCountsBatches: the chart counts every task a CompleteBatch
// completed, from any node, and PruneOutbox deletes counts older than the
// chart's window.
func TestActivityCountsBatches(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	schema := newSchema(t)
	c := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	nodes := []*Store{openStore(t, schema, c.Now), openStore(t, schema, c.Now)}
	cc := creation(t, "acme", "echo", `{"n":1}`)
	for i, s := range nodes {
		for range 3 + i {
			if _, err := s.Enqueue(ctx, cc, backend.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		items := make([]backend.Completion, len(jobs))
		for k, j := range jobs {
			items[k] = backend.Completion{Lease: j.Lease, Result: okResult}
		}
		// The first item again: lost, and not counted.
		items = append(items, items[0])
		if _, err := s.Jobs().(backend.BatchCompleter).CompleteBatch(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	got, err := nodes[0].Operator().Activity(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []backend.ActivityBucket{{Start: c.Now(), Completed: 7}}; !cmp.Equal(want, got) {
		t.Errorf("activity = %v, want %v", got, want)
	}
	c.Advance(backend.MaxActivityWindow + 2*time.Minute)
	if _, err := nodes[1].Jobs().(backend.Pruner).PruneOutbox(ctx, c.Now(), 100); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := nodes[0].pool.QueryRow(ctx, `SELECT count(*) FROM `+nodes[0].q.ident+`.task_activity`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d counter rows left after PruneOutbox (%v), want 0", rows, err)
	}
}
