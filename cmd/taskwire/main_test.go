package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/sqlite"
)

// noEnv is a getenv with no variables set.
func noEnv(string) string { return "" }

func TestMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "migrated.db")
	want := "taskwire: store sqlite:" + db + " (SQLite file " + db + ", tasks survive restarts) is at schema version " + strconv.Itoa(sqlite.SchemaVersion()) + "\n"
	for range 2 { // migrating twice is a no-op
		var out strings.Builder
		if err := run(t.Context(), []string{"migrate", "--store", "sqlite:" + db, "--log-level", "warn"}, &out, io.Discard, noEnv); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if out.String() != want {
			t.Errorf("output %q, want %q", out.String(), want)
		}
	}
	// A migrated file opens with --no-migrate.
	cfg := testConfig(db, 1)
	cfg.NoMigrate = true
	start(t, cfg)

	// TASKWIRE_STORE names the store when --store is absent.
	envDB := filepath.Join(dir, "env.db")
	getenv := func(k string) string {
		if k == storeEnv {
			return envDB
		}
		return ""
	}
	if err := run(t.Context(), []string{"migrate", "--log-level", "error"}, io.Discard, io.Discard, getenv); err != nil {
		t.Fatalf("migrate with %s: %v", storeEnv, err)
	}
	if _, err := os.Stat(envDB); err != nil {
		t.Errorf("%s was not used: %v", storeEnv, err)
	}
}

func TestNoMigrateRefusesAFreshStore(t *testing.T) {
	cfg := testConfig(filepath.Join(t.TempDir(), "fresh.db"), 1)
	cfg.NoMigrate = true
	_, err := startNode(t.Context(), cfg)
	if !errors.Is(err, sqlite.ErrSchemaOutdated) || !strings.Contains(err.Error(), "taskwire migrate --store sqlite:") {
		t.Fatalf("startNode with NoMigrate on a fresh file: %v", err)
	}
}

func TestCommandErrors(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	tests := []struct {
		args []string
		want string
	}{
		{nil, "a command is required"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"serve", "extra"}, "unexpected arguments"},
		{[]string{"serve", "--store", "tasks.txt"}, "not recognised"},
		{[]string{"serve", "--store", db, "--workers", "-1"}, "--workers must be between 0 and 1024"},
		{[]string{"serve", "--store", db, "--shutdown-grace", "0s"}, "--shutdown-grace must be positive"},
		{[]string{"serve", "--store", db, "--addr", ""}, "--addr must not be empty"},
		{[]string{"serve", "--store", db, "--log-level", "loud"}, "--log-level"},
		{[]string{"serve", "--store", db, "--addr", "127.0.0.1:bad"}, "serve:"},
		{[]string{"worker", "--store", db, "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"serve", "--store", db, "--lease", "500ms"}, "--lease must be at least 1s"},
		{[]string{"worker", "--store", db, "--lease", "-1s"}, "--lease must be at least 1s"},
		{[]string{"serve", "--store", db, "--schema", "tenant_a"}, "--schema applies to PostgreSQL stores only"},
		{[]string{"migrate", "--store", db, "--schema", "tenant_a"}, "--schema applies to PostgreSQL stores only"},
		{[]string{"migrate", "--store", "mysql://u:hunter2@h/db"}, "unsupported scheme"},
		// An address that cannot be bound either, so that the command ends
		// even without the check.
		{[]string{"serve", "--store", db, "--addr", "192.0.2.1:8080"}, "not a loopback address"},
		{[]string{"serve", "--store", db, "--max-conns", "-1"}, "--max-conns must not be negative"},
		{[]string{"serve", "--store", db, "--max-conns-per-addr", "-2"}, "--max-conns-per-addr must not be negative"},
		{[]string{"serve", "--store", db, "--max-conns", "10", "--max-conns-per-addr", "11"}, "--max-conns-per-addr must not exceed --max-conns (10)"},
		{[]string{"serve", "--store", db, "--body-timeout", "-1s"}, "--body-timeout and --idle-timeout must not be negative"},
	}
	for _, tt := range tests {
		err := run(t.Context(), tt.args, io.Discard, io.Discard, noEnv)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("run(%q): error shows a password: %v", tt.args, err)
		}
	}
	if err := run(t.Context(), []string{"serve", "-h"}, io.Discard, io.Discard, noEnv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("serve -h = %v", err)
	}
}

// TestServeCommand runs `taskwire serve` as main does, until its context
// ends: it prints the URL and the store, serves durable tools, and stops
// cleanly.
func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "serve.db")
	out := runCommand(t, []string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + db,
		"--workers", "1", "--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "warn"},
		func(t *testing.T, url string) {
			c := newClient(t, url)
			id := createTask(t, c, toolReports, map[string]any{"accountId": "cli", "rows": 3, "seconds": 0})
			waitStatus(t, c, id, mcp.TaskCompleted)
			if files := reportFiles(t, filepath.Join(dir, "out")); len(files) != 1 {
				t.Errorf("--reports-dir holds %v", files)
			}
		})
	for _, s := range []string{"store sqlite:" + db + " (SQLite file", "1 worker; reports are written to " + filepath.Join(dir, "out")} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// TestPostgres runs migrate and serve against the PostgreSQL of the store
// tests (TASKWIRE_TEST_POSTGRES_URL), in the default schema, and checks
// that the password in the URL is never printed. It is skipped when no
// server answers, except under CI=true.
func TestPostgres(t *testing.T) {
	raw := os.Getenv("TASKWIRE_TEST_POSTGRES_URL")
	if raw == "" {
		raw = "postgres://postgres@127.0.0.1:5432/test"
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("TASKWIRE_TEST_POSTGRES_URL: %v", err)
	}
	// A password that must not be printed; servers with trust
	// authentication ignore it.
	password, ok := u.User.Password()
	if !ok {
		password = "pw-that-must-not-be-printed"
		u.User = url.UserPassword(u.User.Username(), password)
	}
	spec := u.String()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	conn, err := pgx.Connect(ctx, spec)
	cancel()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required under CI=true: %s", store.RedactURL(err.Error()))
		}
		t.Skip("PostgreSQL unreachable (set TASKWIRE_TEST_POSTGRES_URL)")
	}
	conn.Close(context.Background())
	// A schema of its own, so that the test neither depends on nor changes
	// what other runs left in the shared database's default schema.
	schema := testSchema(t, raw)

	var migrateOut, logs strings.Builder
	if err := run(t.Context(), []string{"migrate", "--store", spec, "--schema", schema}, &migrateOut, &logs, noEnv); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	dir := t.TempDir()
	out := runCommand(t, []string{"serve", "--addr", "127.0.0.1:0", "--store", spec, "--schema", schema, "--workers", "2",
		"--reports-dir", dir, "--shutdown-grace", "1s", "--log-level", "debug"},
		func(t *testing.T, url string) {
			c := newClient(t, url)
			id := createTask(t, c, toolReports, map[string]any{"accountId": "pg", "rows": 9, "seconds": 0})
			r := structured[Report](t, waitStatus(t, c, id, mcp.TaskCompleted))
			if r.Checksum != reportChecksum("pg", 9) {
				t.Errorf("report = %+v", r)
			}
		})
	for name, text := range map[string]string{"migrate output": migrateOut.String(), "migrate logs": logs.String(), "serve output": out} {
		if strings.Contains(text, password) {
			t.Errorf("%s shows the password:\n%s", name, text)
		}
	}
	if !strings.Contains(out, "(PostgreSQL host ") || !strings.Contains(out, " schema "+schema+")") || !strings.Contains(migrateOut.String(), "xxxxx@") {
		t.Errorf("outputs do not name the redacted store:\n%s\n%s", migrateOut.String(), out)
	}
}

var servingLine = regexp.MustCompile(`serving MCP at (http://\S+)`)

// runCommand runs a serve command until use has finished with its URL,
// then cancels its context and returns everything it printed, stdout and
// stderr together.
func runCommand(t *testing.T, args []string, use func(t *testing.T, url string)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out, out, noEnv) }()

	var url string
	deadline := time.After(waitFor)
	for url == "" {
		if m := servingLine.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, out)
		case <-deadline:
			t.Fatalf("serve printed no URL:\n%s", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	use(t, url)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, out)
		}
	case <-time.After(waitFor):
		t.Fatalf("serve did not stop:\n%s", out)
	}
	return out.String()
}
