package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/sessiontest"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// BenchmarkSessions measures the session calls on a real file: Create (at
// a per-owner limit of 100, so with the count), Load and Touch, and the
// file's growth per session (bytes/session, after a checkpoint).
func BenchmarkSessions(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tasks.db")
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ss := s.Sessions()
	ctx := context.Background()
	b.Run("Create", func(b *testing.B) {
		before := fileSize(b, s, path)
		n := 0
		for b.Loop() {
			if err := ss.Create(ctx, sessiontest.Record(fmt.Sprint("bench", n), fmt.Sprint("p", n%1000)), session.Limits{PerOwner: 100}, sessiontest.Base); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(fileSize(b, s, path)-before)/float64(n), "bytes/session")
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

// fileSize checkpoints the WAL into the database file and returns its size.
func fileSize(b *testing.B, s *sqlite.Store, path string) int64 {
	var busy, log, done int
	if err := s.DebugQueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkListTasks measures one page of 20 of a tenant's tasks, with
// 2,000 tasks of other tenants beside them.
func BenchmarkListTasks(b *testing.B) {
	s := open(b, sqlite.Options{Path: filepath.Join(b.TempDir(), "tasks.db")})
	ctx := context.Background()
	for i := range 2100 {
		cc := creation(b)
		if i%21 != 0 {
			cc.Request.Tenant = fmt.Sprint("other", i%10)
		}
		if _, err := s.Enqueue(ctx, cc, backend.EnqueueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	rc := reqCtx("")
	for b.Loop() {
		page, err := s.ListTasks(ctx, task.ListQuery{Request: rc, Limit: 20})
		if err != nil || len(page.Tasks) != 20 {
			b.Fatalf("ListTasks: %d tasks, %v", len(page.Tasks), err)
		}
	}
}

// BenchmarkClaimComplete measures the job writes of a worker on a real
// file, per job: enqueueing (one task per transaction), then claiming in
// batches of 10 and completing each.
func BenchmarkClaimComplete(b *testing.B) {
	s := open(b, sqlite.Options{Path: filepath.Join(b.TempDir(), "tasks.db")})
	ctx := context.Background()
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	b.Run("enqueue", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Enqueue(ctx, creation(b), backend.EnqueueOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("claim-complete", func(b *testing.B) {
		for range b.N {
			if _, err := s.Enqueue(ctx, creation(b), backend.EnqueueOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for done := 0; done < b.N; {
			jobs, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "bench", Limit: 10, Lease: time.Minute})
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
