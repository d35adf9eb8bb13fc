package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/store/storetest"
)

// TestMigrateClaimColumns upgrades a version 1 database holding an
// available job and a job awaiting input whose task was asked to cancel,
// then inserts a job the way a version 1 process still running on the file
// does: all three are claimable, by kind, with their task's kind.
func TestMigrateClaimColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	v1, err := os.ReadFile(filepath.Join("migrations", "001_initial.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	origin := creation(t).Origin.Persisted()
	now := time.Now().Add(-time.Second).UnixMilli()
	insertV1 := func(id, status, jobState string, cancel int) {
		t.Helper()
		var requests any
		if status == "input_required" {
			requests = `{"k":{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object"}}}}`
		}
		if _, err := db.Exec(`INSERT INTO tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
			updated_at, ttl_ms, poll_interval_ms, input_requests, cancel_requested)
			VALUES (?, 'ep', 't', 'p', 'tool', ?, ?, ?, ?, 0, 1000, ?, ?)`,
			id, status, origin, now, now, requests, cancel); err != nil {
			t.Fatalf("version 1 task: %v", err)
		}
		if _, err := db.Exec(`INSERT INTO jobs (task_id, state, max_attempts, run_at) VALUES (?, ?, 3, ?)`,
			id, jobState, now); err != nil {
			t.Fatalf("version 1 job: %v", err)
		}
	}
	for _, stmt := range []string{string(v1), `CREATE TABLE schema_version (version INTEGER PRIMARY KEY,
		name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		`INSERT INTO schema_version VALUES (1, 'initial', 0)`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	insertV1("a-available", "working", "available", 0)
	insertV1("b-cancel-while-waiting", "input_required", "awaiting_input", 1)
	insertV1("c-still-waiting", "input_required", "awaiting_input", 0)

	s := open(t, sqlite.Options{Path: path})
	insertV1("d-during-rollout", "working", "available", 0)
	jobs, err := s.Jobs().Claim(context.Background(), backend.ClaimParams{Worker: "w", Kinds: []string{"tool"}, Limit: 10,
		Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		if j.Kind != "tool" || j.CancelRequested != (j.TaskID == "b-cancel-while-waiting") || j.InterruptedRuns != 0 {
			t.Errorf("job %s: kind %q, cancel requested %v, interrupted runs %d", j.TaskID, j.Kind, j.CancelRequested,
				j.InterruptedRuns)
		}
		got = append(got, j.TaskID)
	}
	slices.Sort(got)
	if want := []string{"a-available", "b-cancel-while-waiting", "d-during-rollout"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
}

// TestRetryOfAnOlderProcess: a process of schema version 7, still writing
// to the file after the upgrade, retries a job with the update that
// version makes, without a failure category.
func TestRetryOfAnOlderProcess(t *testing.T) {
	storetest.RunOlderRetry(t, func(t *testing.T, now func() time.Time) storetest.OperatorBackend {
		return open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Now: now})
	}, func(b storetest.OperatorBackend, l backend.Lease, runAt time.Time) error {
		var failures int
		return b.(*sqlite.Store).DebugQueryRow(`UPDATE jobs SET state = 'available', failures = failures + 1,
			run_at = ?, lease_owner = NULL, lease_expires_at = NULL WHERE task_id = ? AND attempt = ?
			RETURNING failures`, runAt.UnixMilli(), l.TaskID, l.Attempt).Scan(&failures)
	})
}
