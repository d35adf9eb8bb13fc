package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/store/storetest"
	"github.com/taskwire/taskwire/task"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func open(t testing.TB, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := sqlite.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) backend.Store {
		return open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Now: now})
	})
}

func TestMemoryPath(t *testing.T) {
	s := open(t, sqlite.Options{Path: sqlite.MemoryPath})
	ctx := context.Background()
	tk, err := s.Enqueue(ctx, creation(t), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.FindTask(ctx, reqCtx(tk.ID())); !ok || err != nil {
		t.Fatalf("FindTask: %v %v", ok, err)
	}
}

func creation(t testing.TB) *task.CreationContext {
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "ep", Operation: "tools/call",
		Tool: "tool", Arguments: json.RawMessage(`{"x": 1.0}`)})
	if err != nil {
		t.Fatal(err)
	}
	return &task.CreationContext{Request: task.RequestContext{Endpoint: "ep", Tenant: "t"}, Origin: o}
}

func reqCtx(id string) task.RequestContext {
	return task.RequestContext{TaskID: id, Endpoint: "ep", Tenant: "t"}
}

func TestMigrateIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, sqlite.Options{Path: path})
	ctx := context.Background()
	for range 3 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil || st.SchemaVersion != sqlite.SchemaVersion() || sqlite.SchemaVersion() < 1 {
		t.Fatalf("Stats = %+v, %v; want schema version %d", st, err, sqlite.SchemaVersion())
	}
	s.Close()
	// Reopening, with or without migration, is fine at the current version.
	open(t, sqlite.Options{Path: path})
	open(t, sqlite.Options{Path: path, NoMigrate: true})
}

func TestNoMigrateRefusesOutdated(t *testing.T) {
	_, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "new.db"), NoMigrate: true, Logger: quiet})
	if !errors.Is(err, sqlite.ErrSchemaOutdated) {
		t.Fatalf("Open(NoMigrate) of an empty database: %v, want ErrSchemaOutdated", err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, sqlite.Options{Path: path})
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future', 0)`,
		sqlite.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, noMigrate := range []bool{false, true} {
		_, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, NoMigrate: noMigrate, Logger: quiet})
		if !errors.Is(err, sqlite.ErrSchemaTooNew) {
			t.Fatalf("Open(NoMigrate=%v) of a newer database: %v, want ErrSchemaTooNew", noMigrate, err)
		}
	}
}

func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir with ? and # and %41", "tasks.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := open(t, sqlite.Options{Path: path})
	tk, err := s.Enqueue(ctx, creation(t), backend.EnqueueOptions{IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim: %v %v", jobs, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, sqlite.Options{Path: path})
	got, ok, err := s.FindTask(ctx, reqCtx(tk.ID()))
	if !ok || err != nil || !got.Origin().Equal(tk.Origin()) || got.Status() != task.Working {
		t.Fatalf("after reopen: %v %v %v", ok, err, got)
	}
	// The claim survived too: its lease still fences.
	if err := s.Jobs().Complete(ctx, jobs[0].Lease, &mcp.CallToolResult{}, ""); err != nil {
		t.Fatalf("Complete after reopen: %v", err)
	}
	again, err := s.Enqueue(ctx, creation(t), backend.EnqueueOptions{IdempotencyKey: "k"})
	if err != nil || again.ID() != tk.ID() || again.Status() != task.Completed {
		t.Fatalf("idempotent enqueue after reopen: %v %v", again.ID(), err)
	}
}

func TestPragmas(t *testing.T) {
	for _, tc := range []struct {
		opt  string
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"", 1}, {"NORMAL", 1}, {"full", 2}} {
		path := filepath.Join(t.TempDir(), "tasks.db")
		s := open(t, sqlite.Options{Path: path, Synchronous: tc.opt, BusyTimeout: 1234 * time.Millisecond})
		var sync, busy, fk, temp int
		var mode string
		err := s.DebugQueryRow(`SELECT (SELECT synchronous FROM pragma_synchronous), (SELECT timeout FROM pragma_busy_timeout),
			(SELECT foreign_keys FROM pragma_foreign_keys), (SELECT journal_mode FROM pragma_journal_mode),
			(SELECT temp_store FROM pragma_temp_store)`).Scan(&sync, &busy, &fk, &mode, &temp)
		if err != nil {
			t.Fatal(err)
		}
		// temp_store 2 (MEMORY): the savepoints of a group commit keep
		// their sub-journal in memory instead of writing it to a file.
		if sync != tc.want || busy != 1234 || fk != 1 || mode != "wal" || temp != 2 {
			t.Fatalf("Synchronous %q: synchronous=%d busy_timeout=%d foreign_keys=%d journal_mode=%s temp_store=%d",
				tc.opt, sync, busy, fk, mode, temp)
		}
	}
	// The read pool is read-only.
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")})
	var queryOnly int
	if err := s.DebugReadQueryRow(`SELECT query_only FROM pragma_query_only`).Scan(&queryOnly); err != nil || queryOnly != 1 {
		t.Fatalf("read pool query_only = %d, %v", queryOnly, err)
	}
	if err := s.DebugReadQueryRow(`INSERT INTO outbox (task_id, created_at) VALUES ('x', 0) RETURNING id`).Scan(new(int)); err == nil {
		t.Fatal("the read pool accepted a write")
	}
	if _, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "x.db"), Synchronous: "OFF"}); err == nil {
		t.Fatal("Synchronous OFF accepted")
	}
}

// TestOutbox: every change a client can observe adds one outbox row in its
// transaction; other writes add none.
func TestOutbox(t *testing.T) {
	ctx := context.Background()
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")})
	rows := func() int {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Outbox
	}
	step := func(what string, want int, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := rows(); got != want {
			t.Fatalf("after %s: %d outbox rows, want %d", what, got, want)
		}
	}
	tk, err := s.Enqueue(ctx, creation(t), backend.EnqueueOptions{})
	step("Enqueue", 1, err)
	claimOne := func() backend.JobRow {
		jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Limit: 1, Lease: time.Minute})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
		}
		return jobs[0]
	}
	j := claimOne()
	step("Claim", 1, nil)
	step("Heartbeat", 1, s.Jobs().Heartbeat(ctx, j.Lease, time.Minute))
	reqs := mcp.InputRequests{"a": {Method: mcp.MethodRootsList}, "b": {Method: mcp.MethodRootsList}}
	step("RequestInput", 2, s.Jobs().RequestInput(ctx, j.Lease, reqs, ""))
	answer := func(keys ...string) error {
		resp := mcp.InputResponses{}
		for _, k := range keys {
			resp[k] = json.RawMessage(`{"roots":[]}`)
		}
		return s.UpdateTask(ctx, task.UpdateContext{RequestContext: reqCtx(tk.ID()), Responses: resp})
	}
	step("UpdateTask a", 3, answer("a"))
	step("UpdateTask a again", 3, answer("a"))
	step("UpdateTask b", 4, answer("b"))
	j = claimOne()
	step("RequestCancel", 5, s.RequestCancel(ctx, reqCtx(tk.ID())))
	step("RequestCancel again", 5, s.RequestCancel(ctx, reqCtx(tk.ID())))
	step("Release", 5, s.Jobs().Release(ctx, j.Lease))
	j = claimOne()
	step("Complete", 6, s.Jobs().Complete(ctx, j.Lease, &mcp.CallToolResult{}, ""))
	step("RequestCancel of a terminal task", 6, s.RequestCancel(ctx, reqCtx(tk.ID())))

	n, err := s.Jobs().(backend.Pruner).PruneOutbox(ctx, time.Now().Add(time.Hour), 4)
	step("PruneOutbox", 2, err)
	if n != 4 {
		t.Fatalf("PruneOutbox removed %d, want 4", n)
	}
}

// TestTwoStoresOneFile: two stores (as two processes would) share a file;
// their writers take turns through SQLite's lock and busy timeout, and
// every task is completed exactly once.
func TestTwoStoresOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	stores := []*sqlite.Store{open(t, sqlite.Options{Path: path}), open(t, sqlite.Options{Path: path})}
	const n = 60
	for range n {
		if _, err := stores[0].Enqueue(ctx, creation(t), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	done := map[string]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		s := stores[w%2]
		wg.Go(func() {
			for {
				jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Limit: 2, Lease: time.Minute})
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				for _, j := range jobs {
					if err := s.Jobs().Complete(ctx, j.Lease, &mcp.CallToolResult{}, ""); err != nil {
						t.Errorf("Complete: %v", err)
						continue
					}
					mu.Lock()
					done[j.TaskID]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(done) != n {
		t.Fatalf("%d tasks completed, want %d", len(done), n)
	}
	for id, c := range done {
		if c != 1 {
			t.Fatalf("task %s completed %d times", id, c)
		}
	}
	st, err := stores[1].Stats(ctx)
	if err != nil || st.Tasks[task.Completed] != n || st.Jobs["done"] != n {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
}
