package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"


	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/storetest"
)

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema, nil)
	ctx := ctxT(t)
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	openStore(t, schema, nil) // a second node on the migrated schema
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.q.ident+`.schema_version`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if v, err := s.version(ctx, s.pool); v != SchemaVersion() || rows != SchemaVersion() || err != nil {
		t.Fatalf("version %d with %d rows (%v), want %d", v, rows, err, SchemaVersion())
	}
}

func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	const nodes = 4
	stores := make([]*Store, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			stores[i], errs[i] = Open(context.Background(), Options{URL: testURL(), Schema: schema, MaxConns: 2, Logger: quiet})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open %d: %v", i, err)
		} else {
			defer stores[i].Close()
		}
	}
	if t.Failed() {
		return
	}
	if v, err := stores[0].version(ctxT(t), stores[0].pool); v != SchemaVersion() || err != nil {
		t.Fatalf("version = %d, %v", v, err)
	}
}

func TestSchemaVersionChecks(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)

	// A fresh schema with NoMigrate is outdated, and Open creates nothing.
	fresh := newSchema(t)
	_, err := Open(ctx, Options{URL: testURL(), Schema: fresh, NoMigrate: true, Logger: quiet})
	if !errors.Is(err, ErrSchemaOutdated) {
		t.Fatalf("NoMigrate on an empty schema = %v, want ErrSchemaOutdated", err)
	}

	// A schema migrated by newer code is refused, migrating or not.
	schema := newSchema(t)
	s := openStore(t, schema, nil)
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.q.ident+`.schema_version (version, name, applied_at)
		VALUES ($1, 'from_the_future', now())`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	for _, noMigrate := range []bool{false, true} {
		_, err := Open(ctx, Options{URL: testURL(), Schema: schema, NoMigrate: noMigrate, Logger: quiet})
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Errorf("NoMigrate %v on a newer schema = %v, want ErrSchemaTooNew", noMigrate, err)
		}
	}
	if err := s.Migrate(ctx); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema = %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"no URL":           {},
		"bad schema":       {URL: testURL(), Schema: `a"; DROP TABLE x; --`},
		"long schema":      {URL: testURL(), Schema: "s0123456789012345678901234567890123456789012345678901"},
		"fractional TTL":   {URL: testURL(), DefaultTTL: 1500 * 1000},
		"negative retries": {URL: testURL(), DefaultMaxAttempts: -1},
	} {
		if _, err := Open(context.Background(), opts); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

// TestMigrateClaimColumns upgrades a version 1 schema holding a queued job
// to the current version, then inserts a job the way a version 1 node still
// running during a rolling upgrade does (without the claim columns): both
// jobs are claimable, by kind, with the kind of their task.
func TestMigrateClaimColumns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := storeAtVersion(t, 1)
	schema := s.opts.Schema
	insertV1 := func(id string) {
		t.Helper()
		cc := creation(t, "tenant", "tool.v1", `{"n":1}`)
		_, err := s.pool.Exec(ctx, `WITH t AS (
				INSERT INTO `+s.q.ident+`.tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
					updated_at, expires_at, ttl_ms, poll_interval_ms)
				VALUES ($1, $2, 'tenant', 'p', 'tool.v1', 'working', $3, now() - interval '1 second', now(),
					now() + interval '1 hour', 3600000, 1000)
				RETURNING id, created_at)
			INSERT INTO `+s.q.ident+`.jobs (task_id, state, max_attempts, run_at, created_at)
			SELECT id, 'available', 3, created_at, created_at FROM t`,
			id, cc.Request.Endpoint, cc.Origin.Persisted())
		if err != nil {
			t.Fatalf("version 1 insert: %v", err)
		}
	}
	insertV1("before-upgrade")
	upgraded := openStore(t, schema, nil)
	insertV1("during-rollout")
	jobs, err := upgraded.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Kinds: []string{"tool.v1"}, Limit: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		if j.Kind != "tool.v1" || j.Attempt != 1 || j.InterruptedRuns != 0 {
			t.Errorf("job %s: kind %q attempt %d interrupted runs %d", j.TaskID, j.Kind, j.Attempt, j.InterruptedRuns)
		}
		got = append(got, j.TaskID)
	}
	slices.Sort(got)
	if want := []string{"before-upgrade", "during-rollout"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
}

// TestTerminalTaskImmutable checks the schema's last line of defence: once
// a task is terminal, no statement may change what clients see of it, while
// its bookkeeping (the cancel flag) may still change.
func TestTerminalTaskImmutable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := openStore(t, newSchema(t), nil)
	snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := `UPDATE ` + s.q.ident + `.tasks SET status_message = 'changed' WHERE id = $1`
	if _, err := s.pool.Exec(ctx, update, snap.ID()); err != nil {
		t.Fatalf("updating a working task: %v", err)
	}
	j := claimOne(t, s, time.Time{})
	if err := s.Jobs().Complete(ctx, j.Lease, &mcp.CallToolResult{}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, update, snap.ID()); err == nil {
		t.Fatal("a completed task's status message changed")
	}
	if _, err := s.pool.Exec(ctx, `UPDATE `+s.q.ident+`.tasks SET cancel_requested = true WHERE id = $1`, snap.ID()); err != nil {
		t.Fatalf("bookkeeping of a completed task: %v", err)
	}
}

// TestRetryOfAnOlderNode: a node of schema version 9, still running during
// the rollout of version 10, retries a job with the statement that version
// runs: the retry statement alone, without a failure category (and so
// never exempt from max_attempts, $7).
func TestRetryOfAnOlderNode(t *testing.T) {
	t.Parallel()
	storetest.RunOlderRetry(t, func(t *testing.T, now func() time.Time) storetest.OperatorBackend {
		return openStore(t, newSchema(t), now)
	}, func(b storetest.OperatorBackend, l backend.Lease, runAt time.Time) error {
		s := b.(*Store)
		_, err := fencedEvent(ctxT(t), s.pool, "version 9 retry", s.q.retry, s.now(), l.TaskID, l.Attempt, runAt, "",
			exhaustedJSON, false)
		return err
	})
}
