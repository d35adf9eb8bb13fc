package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// BenchmarkEnqueue measures Enqueue: one statement inserting the task, the
// job and the outbox row, with its NOTIFY.
func BenchmarkEnqueue(b *testing.B) {
	s := openStore(b, newSchema(b), nil)
	ctx := ctxT(b)
	cc := creation(b, "acme", "echo", `{"n":1}`)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Enqueue(ctx, cc, worker.EnqueueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimComplete measures claiming jobs in batches and completing
// each, per job; the jobs are enqueued before the timer starts.
func BenchmarkClaimComplete(b *testing.B) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := openStore(b, newSchema(b), nil)
			ctx := ctxT(b)
			cc := creation(b, "acme", "echo", `{"n":1}`)
			for range b.N {
				if _, err := s.Enqueue(ctx, cc, worker.EnqueueOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
			b.ResetTimer()
			for done := 0; done < b.N; {
				jobs, err := s.Claim(ctx, worker.ClaimParams{Worker: "bench", Limit: batch, Lease: time.Minute})
				if err != nil || len(jobs) == 0 {
					b.Fatalf("Claim = %d jobs, %v", len(jobs), err)
				}
				for _, j := range jobs {
					if err := s.Complete(ctx, j.Lease, res, ""); err != nil {
						b.Fatal(err)
					}
				}
				done += len(jobs)
			}
		})
	}
}
