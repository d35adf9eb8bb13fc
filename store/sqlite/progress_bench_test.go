package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// BenchmarkCompleteBatchProgress measures a CompleteBatch of 200 jobs
// with and without the progress count of a pending report: the cost of
// the worker's progress mode on SQLite.
func BenchmarkCompleteBatchProgress(b *testing.B) {
	for _, withProgress := range []bool{false, true} {
		name := "plain"
		if withProgress {
			name = "progress"
		}
		b.Run(name, func(b *testing.B) {
			s := open(b, sqlite.Options{Path: filepath.Join(b.TempDir(), "tasks.db")})
			ctx := context.Background()
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}
			const batch = 200
			items := make([]backend.BatchItem, batch)
			for i := range items {
				items[i] = backend.BatchItem{Creation: creation(b)}
			}
			n := 0
			for b.Loop() {
				b.StopTimer()
				if _, err := s.EnqueueBatch(ctx, items); err != nil {
					b.Fatal(err)
				}
				jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: batch, Lease: time.Minute, Now: time.Now()})
				if err != nil || len(jobs) != batch {
					b.Fatalf("Claim: %d jobs, %v", len(jobs), err)
				}
				cs := make([]backend.Completion, batch)
				for i, j := range jobs {
					cs[i] = backend.Completion{Lease: j.Lease, Result: res}
					if withProgress {
						cs[i].Progress = &task.Progress{Current: 1, Total: 1}
					}
				}
				b.StartTimer()
				if _, err := s.Jobs().(backend.BatchCompleter).CompleteBatch(ctx, cs); err != nil {
					b.Fatal(err)
				}
				n += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1000, "µs/job")
		})
	}
}
