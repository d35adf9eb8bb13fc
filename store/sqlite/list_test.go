package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/sessiontest"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// TestListCursorsShareTheFile: a cursor one Store issued continues the
// listing on another Store of the same file and after a restart (the key
// is in the file), and is refused by a Store of another file.
func TestListCursorsShareTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	ctx := context.Background()
	a, err := sqlite.Open(ctx, sqlite.Options{Path: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.Enqueue(ctx, creation(t), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	caller := reqCtx("")
	first, err := a.ListTasks(ctx, task.ListQuery{Request: caller, Limit: 2})
	if err != nil || len(first.Tasks) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %d tasks, cursor %q, %v", len(first.Tasks), first.NextCursor, err)
	}
	b := open(t, sqlite.Options{Path: path})
	for name, s := range map[string]*sqlite.Store{"another Store": b, "the same Store": a} {
		page, err := s.ListTasks(ctx, task.ListQuery{Request: caller, Cursor: first.NextCursor, Limit: 2})
		if err != nil || len(page.Tasks) != 1 || page.NextCursor != "" {
			t.Errorf("second page on %s: %d tasks, cursor %q, %v", name, len(page.Tasks), page.NextCursor, err)
		}
	}
	a.Close()
	restarted := open(t, sqlite.Options{Path: path})
	if page, err := restarted.ListTasks(ctx, task.ListQuery{Request: caller, Cursor: first.NextCursor, Limit: 2}); err != nil || len(page.Tasks) != 1 {
		t.Errorf("second page after a restart: %d tasks, %v", len(page.Tasks), err)
	}
	other := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "other.db")})
	if _, err := other.ListTasks(ctx, task.ListQuery{Request: caller, Cursor: first.NextCursor, Limit: 2}); !errors.Is(err, task.ErrBadCursor) {
		t.Errorf("another file's store took the cursor: %v", err)
	}
}

// TestMigrateListingAndSessions upgrades a version 3 file holding a task:
// the task is listed, sessions can be created, and the cursor key is there.
func TestMigrateListingAndSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v3.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
		applied_at INTEGER NOT NULL) STRICT`}
	for i, name := range []string{"001_initial", "002_claim_columns", "003_interrupted_runs"} {
		b, err := os.ReadFile(filepath.Join("migrations", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b), fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, i+1, name[4:]))
	}
	now := time.Now().UnixMilli()
	stmts = append(stmts, fmt.Sprintf(`INSERT INTO tasks (id, endpoint, tenant, principal, kind, status, origin,
		created_at, updated_at, ttl_ms, poll_interval_ms) VALUES ('v3-task', 'ep', 't', 'p', 'tool', 'working', X'%x',
		%d, %d, 0, 1000)`, creation(t).Origin.Persisted(), now, now))
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s := open(t, sqlite.Options{Path: path})
	page, err := s.ListTasks(context.Background(), task.ListQuery{Request: reqCtx(""), Limit: 10})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID() != "v3-task" {
		t.Fatalf("listing after the upgrade: %d tasks, %v", len(page.Tasks), err)
	}
	if err := s.Sessions().Create(context.Background(), sessiontest.Record("s", "alice"), session.Limits{PerOwner: 1}, sessiontest.Base); err != nil {
		t.Fatalf("Create session after the upgrade: %v", err)
	}
}
