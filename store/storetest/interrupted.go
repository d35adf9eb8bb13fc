package storetest

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// testQueueOrder: a job whose run was interrupted (rescued after its lease
// expired, or released), or that waited for input and was answered, keeps
// its place in the queue: it is claimed before the jobs enqueued after it
// was first queued, not behind the whole backlog.
func testQueueOrder(t *testing.T, open opener) {
	for _, tc := range []struct {
		name string
		// interrupt ends the claim of j some way that leaves the job to
		// run again.
		interrupt func(t *testing.T, b backend.Store, c *Clock, j backend.JobRow)
	}{
		{"rescued", func(t *testing.T, b backend.Store, c *Clock, j backend.JobRow) {
			c.Advance(lease)
			if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 1 {
				t.Fatalf("RescueExpired = %d, %v; want 1", n, err)
			}
		}},
		{"released", func(t *testing.T, b backend.Store, c *Clock, j backend.JobRow) {
			c.Advance(time.Second)
			if err := b.Jobs().Release(bg, j.Lease); err != nil {
				t.Fatal(err)
			}
		}},
		{"answered", func(t *testing.T, b backend.Store, c *Clock, j backend.JobRow) {
			if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k": reqElicit}, "asking"); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Second)
			update(t, b, j.TaskID, mcp.InputResponses{"k": respElicit})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := open(t)
			first := enqueue(t, b, backend.EnqueueOptions{})
			j := claimOne(t, b, c, first.ID())
			var later []string
			for range 3 {
				c.Advance(time.Millisecond)
				later = append(later, enqueue(t, b, backend.EnqueueOptions{}).ID())
			}
			tc.interrupt(t, b, c, j)
			again := claimOne(t, b, c, first.ID())
			if again.Attempt <= j.Attempt {
				t.Fatalf("reclaimed at attempt %d, first claim %d", again.Attempt, j.Attempt)
			}
			for _, id := range later {
				claimOne(t, b, c, id)
			}
		})
	}
}

// testInterruptedRuns: rescued leases count interrupted runs, apart from
// handler failures: interruptions never use up MaxAttempts and Retry never
// uses up the limit of interrupted runs; each limit fails the task with the
// exhausted error when reached. Jobs enqueued without MaxAttempts get
// backend.DefaultMaxAttempts.
func testInterruptedRuns(t *testing.T, open opener) {
	b, c := open(t)
	j := claimOne(t, b, c, enqueue(t, b, backend.EnqueueOptions{}).ID())
	if j.MaxAttempts != backend.DefaultMaxAttempts {
		t.Errorf("default MaxAttempts = %d, want %d", j.MaxAttempts, backend.DefaultMaxAttempts)
	}
	if err := b.Jobs().Complete(bg, j.Lease, textResult, ""); err != nil {
		t.Fatal(err)
	}

	const maxRuns = 4
	interrupt := func(backend.JobRow) {
		t.Helper()
		c.Advance(lease)
		n, err := b.Jobs().RescueExpired(bg, backend.RescueParams{Now: c.Now(), Limit: 10, MaxInterruptedRuns: maxRuns})
		if err != nil || n < 1 {
			t.Fatalf("RescueExpired = %d, %v", n, err)
		}
	}
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 2})
	for want := range maxRuns - 1 {
		j := claimOne(t, b, c, tk.ID())
		if j.InterruptedRuns != want || j.Failures != 0 {
			t.Fatalf("claim %d: %d interrupted runs, %d failures; want %d, 0", want+1, j.InterruptedRuns, j.Failures, want)
		}
		if want == maxRuns-2 {
			// One handler failure among the interruptions, and a
			// release, which counts neither.
			if err := b.Jobs().Retry(bg, j.Lease, c.Now(), "retrying", ""); err != nil {
				t.Fatal(err)
			}
			j = claimOne(t, b, c, tk.ID())
			if err := b.Jobs().Release(bg, j.Lease); err != nil {
				t.Fatal(err)
			}
			j = claimOne(t, b, c, tk.ID())
			if j.InterruptedRuns != want || j.Failures != 1 {
				t.Fatalf("after Retry and Release: %d interrupted runs, %d failures", j.InterruptedRuns, j.Failures)
			}
		}
		interrupt(j)
		if got := mustFind(t, b, tk.ID()); got.Status() != task.Working {
			t.Fatalf("after %d interrupted runs of %d allowed: %v", want+1, maxRuns, got.Status())
		}
	}
	interrupt(claimOne(t, b, c, tk.ID()))
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Failed || !isExhausted(got.Error()) {
		t.Fatalf("after %d interrupted runs: %v %+v", maxRuns, got.Status(), got.Error())
	}
	if jobs := claim(t, b, c, 10); len(jobs) != 0 {
		t.Fatalf("claimed %d jobs after the last interrupted run", len(jobs))
	}
}
