package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// benchTasks is how many tasks BenchmarkPages seeds; benchDone of them
// are completed and benchFailed failed, in the last hour.
const (
	benchTasks  = 100_000
	benchDone   = 20_000
	benchFailed = 2_000
)

// benchStore is what the benchmark seeds and serves.
type benchStore interface {
	backend.Store
	backend.OperatorSource
}

// seed fills st with benchTasks tasks over 4 tools and 10 tenants, in
// batches of backend.MaxEnqueueBatch, and ends some of them.
func seed(b *testing.B, st benchStore) (someID string) {
	b.Helper()
	ctx := context.Background()
	items := make([]backend.BatchItem, backend.MaxEnqueueBatch)
	for n := 0; n < benchTasks; n += len(items) {
		for i := range items {
			k := n + i
			o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main",
				Operation: "tools/call", Tool: fmt.Sprintf("tool-%d", k%4), Arguments: json.RawMessage(fmt.Sprintf(`{"k":%d}`, k))})
			if err != nil {
				b.Fatal(err)
			}
			tenant := fmt.Sprintf("tenant-%d", k%10)
			items[i] = backend.BatchItem{Creation: &task.CreationContext{Origin: o,
				Request: task.RequestContext{Endpoint: "main", Tenant: tenant, Principal: "user"}}}
		}
		tks, err := st.EnqueueBatch(ctx, items)
		if err != nil {
			b.Fatal(err)
		}
		someID = tks[0].ID()
	}
	jobs := st.Jobs()
	batcher := jobs.(backend.BatchCompleter)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	for ended := 0; ended < benchDone+benchFailed; {
		claimed, err := jobs.Claim(ctx, backend.ClaimParams{Worker: "bench", Limit: 500, Lease: time.Minute})
		if err != nil || len(claimed) == 0 {
			b.Fatalf("claim: %d, %v", len(claimed), err)
		}
		var done []backend.Completion
		for _, j := range claimed {
			if ended < benchFailed {
				if err := jobs.Fail(ctx, j.Lease, mcp.NewError(mcp.CodeInternalError, "failed"), "", ""); err != nil {
					b.Fatal(err)
				}
			} else {
				done = append(done, backend.Completion{Lease: j.Lease, Result: res})
			}
			ended++
		}
		if len(done) > 0 {
			if _, err := batcher.CompleteBatch(ctx, done); err != nil {
				b.Fatal(err)
			}
		}
	}
	return someID
}

// BenchmarkPages measures the server time of the console's pages (the
// handler alone, no network) over a store of 100,000 tasks, on SQLite and
// PostgreSQL: 100,000 tasks over 4 tools and 10 tenants, 20,000 of them
// completed and 2,000 failed in the last hour. Seeding takes about 20 s
// per store. overview-gauges-cold reads the queue depth afresh for every
// overview; store-gauges is the full read of the store's backend.GaugeSource,
// as a Prometheus scrape makes it.
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 30x ./console/
func BenchmarkPages(b *testing.B) {
	for _, s := range benchStores {
		b.Run(s.name, func(b *testing.B) {
			st, settle := s.open(b)
			id := seed(b, st)
			settle(b)
			// c reuses its queue-depth snapshot (the default, at most
			// 10 s old); cold reads it for every overview.
			opts := console.Options{Store: st.Operator(), Token: []byte(token), Gauges: st.(backend.GaugeSource)}
			c, err := console.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			opts.GaugesMaxAge = time.Nanosecond
			cold, err := console.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer cold.Close()
			b.Run("overview-gauges-cold", func(b *testing.B) {
				for b.Loop() {
					req := httptest.NewRequest(http.MethodGet, "/console/", nil)
					req.Header.Set("Authorization", "Bearer "+token)
					w := httptest.NewRecorder()
					cold.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
			})
			// The full read of the gauges, as package prometheus makes it
			// at a scrape (the overview leaves the counts of tasks out).
			b.Run("store-gauges", func(b *testing.B) {
				for b.Loop() {
					if _, err := st.(backend.GaugeSource).Gauges(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, p := range []struct{ name, path string }{
				{"overview", "/console/"},
				{"list", "/console/tasks"},
				{"list-failed", "/console/tasks?status=failed"},
				{"list-tenant-tool", "/console/tasks?tenant=tenant-3&tool=tool-1"},
				{"task", "/console/tasks/" + id},
			} {
				b.Run(p.name, func(b *testing.B) {
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, p.path, nil)
						req.Header.Set("Authorization", "Bearer "+token)
						w := httptest.NewRecorder()
						c.ServeHTTP(w, req)
						if w.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", p.path, w.Code, w.Body)
						}
					}
				})
			}
		})
	}
}

// benchStores open the stores of the benchmarks. settle, called after
// seeding, does what the database would do on its own shortly after: on
// PostgreSQL, autovacuum's ANALYZE of the seeded tables, without which the
// planner has no statistics and picks other plans than a store in use gets.
var benchStores = []struct {
	name string
	open func(b *testing.B) (st benchStore, settle func(b *testing.B))
}{
	{"sqlite", func(b *testing.B) (benchStore, func(*testing.B)) {
		st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(b.TempDir(), "tasks.db"),
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st, func(*testing.B) {}
	}},
	{"postgres", func(b *testing.B) (benchStore, func(*testing.B)) {
		u := pgtest.URL(b)
		schema := pgtest.Schema(b, u, "twbench_")
		st, err := postgres.Open(context.Background(), postgres.Options{URL: u, Schema: schema,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			conn, err := pgx.Connect(ctx, u)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(context.Background())
			for _, table := range []string{"tasks", "jobs", "task_events"} {
				if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{schema, table}.Sanitize()); err != nil {
					b.Fatal(err)
				}
			}
		}
	}},
}
