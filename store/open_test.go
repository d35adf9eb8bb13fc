package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// readOnly makes path unwritable for this process and restores it when t
// ends: by permissions for an ordinary user, by the immutable attribute
// for root (whom permissions do not stop). Without either it skips t.
func readOnly(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, fi.Mode().Perm()&^0o222); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(path, fi.Mode().Perm()) })
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("running as root and chattr +i is unavailable: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
}

// TestOpenSQLiteChecks checks the start-up checks of a SQLite store: a
// store that opens is writable, and each unusable file fails Open with a
// message naming the file and what to do.
func TestOpenSQLiteChecks(t *testing.T) {
	ctx := context.Background()
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		path := filepath.Join(dir, "tasks.db")
		s, err := store.Open(ctx, "sqlite:"+path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		return path
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the spec
		want  []string                  // substrings of the error; nil: Open succeeds
	}{
		{"fresh file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "new.db") }, nil},
		{"missing directory", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "no", "such", "tasks.db")
		}, []string{"directory", "no/such", "does not exist", "mkdir -p"}},
		{"read-only file", func(t *testing.T) string {
			p := fresh(t)
			readOnly(t, p)
			return p
		}, []string{"cannot write to", "tasks.db", "write permission"}},
		{"read-only directory", func(t *testing.T) string {
			p := fresh(t)
			readOnly(t, filepath.Dir(p))
			return p
		}, []string{"cannot write to", "its directory", "write permission"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t)
			s, err := store.Open(ctx, path, store.Options{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded; want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestOpenBackends checks that one Open serves both backends and that the
// value is the backend's own Store (for backend-specific features).
func TestOpenBackends(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "a.db"), store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*sqlite.Store); !ok {
		t.Errorf("sqlite spec opened %T", s)
	}
	s.Close()

	if _, err := store.Open(ctx, "sqlite:x.db", store.Options{Schema: "x"}); err == nil {
		t.Error("a schema for SQLite was accepted")
	}

	u := pgtest.URL(t)
	schema := pgtest.Schema(t, u, "opener_")
	p, err := store.Open(ctx, u, store.Options{Schema: schema, MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, ok := p.(*postgres.Store); !ok {
		t.Errorf("postgres spec opened %T", p)
	}
	if err := p.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Sessions() == nil {
		t.Error("no session store")
	}
}

// TestOpenMemory checks that memory: opens a fresh in-memory store each
// time, one that holds what it is given, and that a PostgreSQL schema is
// refused for it.
func TestOpenMemory(t *testing.T) {
	ctx := context.Background()
	open := func() *memory.Manager {
		t.Helper()
		s, err := store.Open(ctx, "memory:", store.Options{})
		if err != nil {
			t.Fatalf("Open(memory:): %v", err)
		}
		t.Cleanup(func() { s.Close() })
		m, ok := s.(*memory.Manager)
		if !ok {
			t.Fatalf("memory spec opened %T", s)
		}
		return m
	}
	a, b := open(), open()
	if err := a.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "main",
		Operation: mcp.MethodToolsCall, Tool: "report", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	created, err := a.Create(&task.CreationContext{Request: task.RequestContext{Endpoint: "main",
		ProtocolVersion: mcp.LatestProtocolVersion}, Origin: o})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := a.Find(created.ID()); err != nil {
		t.Errorf("the store lost the task it created: %v", err)
	}
	if _, err := b.Find(created.ID()); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("a second memory: store sees the first one's task (err %v)", err)
	}
	if _, err := store.Open(ctx, "memory:", store.Options{Schema: "x"}); err == nil {
		t.Error("a schema for the in-memory store was accepted")
	}
}

// TestOpenPostgresSchemaOutdated checks that NoMigrate on a fresh schema
// fails with the backend's error and advice.
func TestOpenPostgresSchemaOutdated(t *testing.T) {
	u := pgtest.URL(t)
	schema := pgtest.Schema(t, u, "opener_")
	_, err := store.Open(context.Background(), u, store.Options{Schema: schema, NoMigrate: true})
	if !errors.Is(err, postgres.ErrSchemaOutdated) || !strings.Contains(err.Error(), "taskwire migrate") ||
		!strings.Contains(err.Error(), "schema "+schema) {
		t.Fatalf("Open: %v", err)
	}
}

// TestOpenPostgresFrozen checks that a server that accepts connections but
// never answers fails Open (connect, then migrate) within the timeouts,
// with a message naming host, port and database.
func TestOpenPostgresFrozen(t *testing.T) {
	u := pgtest.URL(t)
	schema := pgtest.Schema(t, u, "opener_")
	proxy := frozenProxy(t, u)
	start := time.Now()
	_, err := store.Open(context.Background(), proxy, store.Options{Schema: schema,
		ConnectTimeout: 300 * time.Millisecond, MigrateTimeout: 300 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("Open of a frozen server succeeded")
	}
	if elapsed > 5*time.Second {
		t.Errorf("Open took %v", elapsed)
	}
	for _, w := range []string{"host 127.0.0.1", "port ", "database ", "schema " + schema, "answering within 300ms"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestMigrateFrozenAfterConnect checks the migration bound: a server that
// stops answering after Open fails Migrate with MigrateTimeout's error,
// instead of hanging.
//
// The schema is migrated beforehand without the short bound, and the store
// under test opens it with NoMigrate: applying every migration to a fresh
// schema within 400ms is not what is tested, and does not fit on a loaded
// machine. The upper bound on Migrate is generous for the same reason; the
// error naming the bound is what shows that MigrateTimeout ended it.
func TestMigrateFrozenAfterConnect(t *testing.T) {
	u := pgtest.URL(t)
	schema := pgtest.Schema(t, u, "opener_")
	ctx := context.Background()
	pre, err := store.Open(ctx, u, store.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	pre.Close()
	proxied, p := pgtest.Proxied(t, u)
	s, err := store.Open(ctx, proxied, store.Options{Schema: schema, NoMigrate: true,
		MigrateTimeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	start := time.Now()
	err = s.Migrate(ctx)
	elapsed := time.Since(start)
	p.Unfreeze() // let the store's listener reconnect and Close promptly
	p.Drop()
	s.Close()
	if err == nil || !strings.Contains(err.Error(), "within 400ms (MigrateTimeout)") ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Migrate on a frozen server: %v, want MigrateTimeout's deadline", err)
	}
	if elapsed < 400*time.Millisecond {
		t.Errorf("Migrate failed after %v, before its bound", elapsed)
	}
	if elapsed > 30*time.Second {
		t.Errorf("Migrate took %v: the bound did not end it", elapsed)
	}
}

// TestOpenPostgresRefused: a server that refuses the connection because
// the URL's database or role does not exist gets that reason once, with
// its own remedy, and not the hint about reaching the server.
func TestOpenPostgresRefused(t *testing.T) {
	base := pgtest.URL(t)
	for _, tc := range []struct {
		name   string
		edit   func(u *url.URL)
		reason string
		hint   string
	}{
		{"no database", func(u *url.URL) { u.Path = "/taskwire_no_such_db" },
			`database "taskwire_no_such_db" does not exist`, "createdb taskwire_no_such_db"},
		{"no role", func(u *url.URL) { u.User = url.User("taskwire_no_such_role") },
			`role "taskwire_no_such_role" does not exist`, "createuser taskwire_no_such_role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(u)
			_, err = store.Open(context.Background(), u.String(), store.Options{})
			if err == nil {
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if n := strings.Count(msg, tc.reason); n != 1 {
				t.Errorf("the reason %q appears %d times in %q", tc.reason, n, msg)
			}
			if !strings.Contains(msg, tc.hint) {
				t.Errorf("error %q lacks the hint %q", msg, tc.hint)
			}
			if strings.Contains(msg, "is the server up") {
				t.Errorf("error %q asks whether the server is up; it answered", msg)
			}
		})
	}
}
