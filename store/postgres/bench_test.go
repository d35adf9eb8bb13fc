package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/sessiontest"
	"github.com/taskwire/taskwire/task"
)

// BenchmarkEnqueue measures Enqueue: one statement inserting the task, the
// job and the outbox row, with its NOTIFY.
func BenchmarkEnqueue(b *testing.B) {
	s := openStore(b, newSchema(b), nil)
	ctx := ctxT(b)
	cc := creation(b, "acme", "echo", `{"n":1}`)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Enqueue(ctx, cc, backend.EnqueueOptions{}); err != nil {
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
				if _, err := s.Enqueue(ctx, cc, backend.EnqueueOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
			b.ResetTimer()
			for done := 0; done < b.N; {
				jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "bench", Limit: batch, Lease: time.Minute})
				if err != nil || len(jobs) == 0 {
					b.Fatalf("Claim = %d jobs, %v", len(jobs), err)
				}
				for _, j := range jobs {
					if err := s.Jobs().Complete(ctx, j.Lease, res, ""); err != nil {
						b.Fatal(err)
					}
				}
				done += len(jobs)
			}
		})
	}
}

// BenchmarkSessions measures the session calls a legacy request makes:
// Create (at a per-owner limit of 100, so with the owner lock and count;
// then with the store-wide limit as well),
// Load, Touch, and the table's size per session (bytes/session, heap,
// indexes and TOAST, with the default capabilities and client info of a
// few dozen bytes).
func BenchmarkSessions(b *testing.B) {
	s := openStore(b, newSchema(b), nil)
	ss := s.Sessions()
	ctx := ctxT(b)
	b.Run("Create", func(b *testing.B) {
		i := 0
		for b.Loop() {
			r := sessiontest.Record(fmt.Sprint("bench", i), fmt.Sprint("p", i%1000))
			if err := ss.Create(ctx, r, session.Limits{PerOwner: 100}, sessiontest.Base); err != nil {
				b.Fatal(err)
			}
			i++
		}
		var size int64
		if err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size($1)`, s.q.ident+".sessions").Scan(&size); err == nil {
			var n int64
			s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.q.ident+`.sessions`).Scan(&n)
			b.ReportMetric(float64(size)/float64(n), "bytes/session")
		}
	})
	// With the store-wide limit too (the server's default): the store lock
	// and a count of every live session, here the rows Create left.
	b.Run("CreateWithTotal", func(b *testing.B) {
		i := 0
		for b.Loop() {
			r := sessiontest.Record(fmt.Sprint("total", i), fmt.Sprint("p", i%1000))
			if err := ss.Create(ctx, r, session.Limits{PerOwner: 100, Total: 100_000}, sessiontest.Base); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	key := sessiontest.Key("bench0")
	b.Run("Load", func(b *testing.B) {
		for b.Loop() {
			if _, err := ss.Load(ctx, key, sessiontest.Base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Touch", func(b *testing.B) {
		for b.Loop() {
			if err := ss.Touch(ctx, key, sessiontest.Base); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListTasks measures one page of 20 of a tenant's tasks, with
// 2,000 tasks of other tenants beside them.
func BenchmarkListTasks(b *testing.B) {
	s := openStore(b, newSchema(b), nil)
	ctx := ctxT(b)
	for i := range 2100 {
		tenant := fmt.Sprint("other", i%10)
		if i%21 == 0 {
			tenant = "acme"
		}
		if _, err := s.Enqueue(ctx, creation(b, tenant, "echo", `{"n":1}`), backend.EnqueueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	s.pool.Exec(ctx, `ANALYZE `+s.q.ident+`.tasks`)
	for b.Loop() {
		page, err := s.ListTasks(ctx, task.ListQuery{Request: rc("", "acme"), Limit: 20})
		if err != nil || len(page.Tasks) != 20 {
			b.Fatalf("ListTasks: %d tasks, %v", len(page.Tasks), err)
		}
	}
}
