package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// benchEndpoint, benchTenant and benchKind bind the benchmark's tasks.
const (
	benchEndpoint = "bench"
	benchTenant   = "bench"
	benchKind     = "bench_job"
)

// warnLogger logs warnings and errors of the stores and the runtime to
// standard error.
func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// storeTarget is one opened store with what is needed to inspect and remove
// it afterwards.
type storeTarget struct {
	Kind  string // "postgres" or "sqlite"
	Store backend.Store
	// Where: the schema (postgres) or the database file (sqlite).
	Where string

	cfg    config
	tmpDir string
}

// openStore opens a fresh store of the given kind: a new schema in the
// run's database, or a new file in a new temporary directory.
func openStore(ctx context.Context, cfg config, kind string) (*storeTarget, error) {
	switch kind {
	case "postgres":
		schema := randomName("twbench_")
		st, err := postgres.Open(ctx, postgres.Options{
			URL: cfg.pgURL(), Schema: schema, MaxConns: cfg.PGConns, Logger: warnLogger(),
		})
		if err != nil {
			_ = dropSchema(cfg.pgURL(), schema)
			return nil, err
		}
		return &storeTarget{Kind: kind, Store: st, Where: schema, cfg: cfg}, nil
	case "sqlite":
		dir, err := os.MkdirTemp(cfg.TempDir, "durablebench-")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "tasks.db")
		st, err := sqlite.Open(ctx, sqlite.Options{Path: path, Synchronous: "NORMAL", Logger: warnLogger()})
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		return &storeTarget{Kind: kind, Store: st, Where: path, cfg: cfg, tmpDir: dir}, nil
	}
	return nil, fmt.Errorf("unknown store %q", kind)
}

// reopen closes the store and opens a new Store on the same schema or
// file, as a separate worker process would.
func (t *storeTarget) reopen(ctx context.Context) error {
	if err := t.Store.Close(); err != nil {
		return err
	}
	t.Store = nil
	var err error
	switch t.Kind {
	case "postgres":
		t.Store, err = postgres.Open(ctx, postgres.Options{
			URL: t.cfg.pgURL(), Schema: t.Where, MaxConns: t.cfg.PGConns, Logger: warnLogger(), NoMigrate: true,
		})
	case "sqlite":
		t.Store, err = sqlite.Open(ctx, sqlite.Options{Path: t.Where, Synchronous: "NORMAL", Logger: warnLogger(), NoMigrate: true})
	}
	return err
}

// closeStore closes the store, if it is open.
func (t *storeTarget) closeStore() error {
	if t.Store == nil {
		return nil
	}
	err := t.Store.Close()
	t.Store = nil
	return err
}

// close closes the store and removes its schema or directory.
func (t *storeTarget) close() error {
	err := t.closeStore()
	switch t.Kind {
	case "postgres":
		if derr := dropSchema(t.cfg.pgURL(), t.Where); derr != nil && err == nil {
			err = derr
		}
	case "sqlite":
		if rerr := os.RemoveAll(t.tmpDir); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// statusCounts counts the store's tasks by status, reading the tables
// directly (after the phase, for verification).
func (t *storeTarget) statusCounts(ctx context.Context) (map[string]int, error) {
	counts := map[string]int{}
	add := func(status string, n int) { counts[status] = n }
	switch t.Kind {
	case "postgres":
		conn, err := pgx.Connect(ctx, t.cfg.pgURL())
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, "SELECT status, count(*) FROM "+pgx.Identifier{t.Where}.Sanitize()+".tasks GROUP BY status")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				return nil, err
			}
			add(s, n)
		}
		return counts, rows.Err()
	case "sqlite":
		db, err := sql.Open("sqlite", "file:"+t.Where+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			return nil, err
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, "SELECT status, count(*) FROM tasks GROUP BY status")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				return nil, err
			}
			add(s, n)
		}
		return counts, rows.Err()
	}
	return nil, fmt.Errorf("unknown store %q", t.Kind)
}

// fmtCounts renders status counts in a stable order.
func fmtCounts(c map[string]int) string {
	var parts []string
	for _, s := range []string{"completed", "working", "input_required", "failed", "cancelled"} {
		if n, ok := c[s]; ok {
			parts = append(parts, fmt.Sprintf("%s=%d", s, n))
		}
	}
	if len(parts) == 0 {
		return "no tasks"
	}
	return strings.Join(parts, " ")
}

// benchArgs is the benchmark tool's input and output.
type benchArgs struct {
	N int `json:"n"`
}

// creationContext returns the creation context of one benchmark task, as
// the server would build it for a tools/call of benchKind with {"n":n}.
func creationContext(n int) (*task.CreationContext, error) {
	args, _ := json.Marshal(benchArgs{N: n})
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion,
		Endpoint:        benchEndpoint,
		Operation:       mcp.MethodToolsCall,
		Tool:            benchKind,
		Arguments:       args,
	})
	if err != nil {
		return nil, err
	}
	return &task.CreationContext{
		Request: task.RequestContext{
			Endpoint: benchEndpoint, Tenant: benchTenant, Principal: benchTenant,
			ProtocolVersion: mcp.LatestProtocolVersion,
		},
		Origin: o,
	}, nil
}

// noopResult is what the no-op handler returns.
func noopResult() *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
}

// phaseName returns the name of a phase of a store kind: "pg-worker" or
// "sqlite-worker".
func phaseName(kind, what string) string {
	if kind == "postgres" {
		return "pg-" + what
	}
	return kind + "-" + what
}
