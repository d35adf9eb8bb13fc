package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// openVersion10 creates a database at path migrated to version 10, the
// last one whose triggers recorded every creation, claim and completion
// as rows, and returns a connection to it.
func openVersion10(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	stmts := []string{`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
		applied_at INTEGER NOT NULL) STRICT`}
	files, err := filepath.Glob(filepath.Join("migrations", "0*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files[:10] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b), fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, 'v%d', 0)`, i+1, i+1))
	}
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestHistoryAcrossTheUpgrade: tasks created and claimed by version 10
// (their created and claimed steps written as rows by its triggers), one
// of them claimed by a version 10 process still running on the file after
// the upgrade, are completed by this version: each history reads every
// step once, and the counts and the activity chart count both
// completions once.
func TestHistoryAcrossTheUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v10.db")
	db := openVersion10(t, path)
	origin := creation(t).Origin.Persisted()
	created := time.Now().Add(-time.Minute).UnixMilli()
	ids := []string{"0190000000a1-00000000000000000000000000000001", "0190000000a1-00000000000000000000000000000002"}
	// claimV10 is the claim of a version 10 process.
	claimV10 := func(exec func(string, ...any) error, id string) {
		t.Helper()
		if err := exec(`UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = 'old',
			lease_expires_at = ? WHERE task_id = ? AND attempt = 0`, time.Now().Add(time.Hour).UnixMilli(), id); err != nil {
			t.Fatalf("claim of version 10: %v", err)
		}
	}
	execDB := func(q string, args ...any) error { _, err := db.Exec(q, args...); return err }
	for _, id := range ids {
		if err := execDB(`INSERT INTO tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
			updated_at, ttl_ms, poll_interval_ms) VALUES (?, 'ep', 't', 'p', 'tool', 'working', ?, ?, ?, 0, 1000)`,
			id, origin, created, created); err != nil {
			t.Fatal(err)
		}
		if err := execDB(`INSERT INTO jobs (task_id, state, max_attempts, run_at, kind, created_at)
			VALUES (?, 'available', 3, ?, 'tool', ?)`, id, created, created); err != nil {
			t.Fatal(err)
		}
	}
	claimV10(execDB, ids[0])
	db.Close()

	s := open(t, sqlite.Options{Path: path})
	claimV10(func(q string, args ...any) error { _, err := s.DebugExec(q, args...); return err }, ids[1])
	bg := context.Background()
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	if err := s.Jobs().Complete(bg, backend.Lease{TaskID: ids[0], Attempt: 1}, res, "done"); err != nil {
		t.Fatal(err)
	}
	lost, err := s.Jobs().(backend.BatchCompleter).CompleteBatch(bg,
		[]backend.Completion{{Lease: backend.Lease{TaskID: ids[1], Attempt: 1}, Result: res, Message: "done"}})
	if err != nil || lost[0] {
		t.Fatalf("CompleteBatch = %v, %v", lost, err)
	}
	want := []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "old"},
		{Kind: backend.EventCompleted, Attempt: 1, Message: "done"},
	}
	for _, id := range ids {
		ot, err := s.Operator().Task(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, shapes(ot.Events)); d != "" {
			t.Errorf("history of %s (-want +got):\n%s", id, d)
		}
		if !ot.Events[0].At.Equal(time.UnixMilli(created)) {
			t.Errorf("created at %v, want %v", ot.Events[0].At, time.UnixMilli(created))
		}
	}
	counts, err := s.Operator().Counts(bg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]backend.TaskCount{{Tool: "tool", Status: task.Completed, N: 2}}, counts); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	buckets, err := s.Operator().Activity(bg, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var completed int64
	for _, b := range buckets {
		completed += b.Completed
	}
	if completed != 2 {
		t.Errorf("activity counts %d completions, want 2: %+v", completed, buckets)
	}
}

type eventShape struct {
	Kind    backend.TaskEventKind
	Attempt int64
	Worker  string
	Message string
}

func shapes(evs []backend.TaskEvent) []eventShape {
	out := make([]eventShape, len(evs))
	for i, e := range evs {
		out[i] = eventShape{e.Kind, e.Attempt, e.Worker, e.Message}
	}
	return out
}
