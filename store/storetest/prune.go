package storetest

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// testPrune: for a backend that is a backend.Pruner, PruneJobs deletes only
// the jobs of finished tasks, in batches, and leaves what clients read;
// writes of a pruned job's lease are refused; the tasks still expire and
// are deleted; cancelling a finished task changes nothing. PruneOutbox is
// bounded by its limit and its horizon. Backends that do not prune skip it.
func testPrune(t *testing.T, open opener) {
	b, c := open(t)
	p, ok := b.Jobs().(backend.Pruner)
	if !ok {
		t.Skip("the backend is not a backend.Pruner")
	}
	var finished []backend.JobRow
	for range 5 {
		tk := enqueue(t, b, backend.EnqueueOptions{TTL: time.Minute})
		j := claimOne(t, b, c, tk.ID())
		wantErr(t, "Complete", b.Jobs().Complete(bg, j.Lease, textResult, "done"), "ok")
		finished = append(finished, j)
	}
	running := enqueue(t, b, backend.EnqueueOptions{TTL: time.Minute})
	live := claimOne(t, b, c, running.ID())
	waiting := enqueue(t, b, backend.EnqueueOptions{TTL: time.Minute})

	// Nothing finished before the horizon: nothing is pruned.
	if n, err := p.PruneJobs(bg, c.Now().Add(-time.Second), 100); err != nil || n != 0 {
		t.Fatalf("PruneJobs before the tasks finished = %d, %v; want 0", n, err)
	}
	c.Advance(time.Second)
	now := c.Now()
	for _, want := range []int{2, 2, 1, 0} {
		if n, err := p.PruneJobs(bg, now, 2); err != nil || n != want {
			t.Fatalf("PruneJobs(now, 2) = %d, %v; want %d", n, err, want)
		}
	}
	if n, err := p.PruneJobs(bg, now, 0); err != nil || n != 0 {
		t.Fatalf("PruneJobs(now, 0) = %d, %v", n, err)
	}
	for _, j := range finished {
		got := mustFind(t, b, j.TaskID)
		if got.Status() != task.Completed || got.Result() == nil || got.StatusMessage() != "done" {
			t.Fatalf("a finished task after PruneJobs: %v", got)
		}
		for name, write := range fencedWrites(b, j.Lease, c) {
			wantErr(t, "pruned job: "+name, write(), "ErrLeaseLost")
		}
		wantErr(t, "RequestCancel of a finished task", b.RequestCancel(bg, rc(j.TaskID, endpointA, tenantA)), "ok")
		if got := mustFind(t, b, j.TaskID); got.Status() != task.Completed {
			t.Fatalf("a cancelled finished task: %v", got.Status())
		}
	}
	// Unfinished jobs are untouched.
	wantErr(t, "Heartbeat of a running job", b.Jobs().Heartbeat(bg, live.Lease, lease), "ok")
	claimOne(t, b, c, waiting.ID())

	// Expiry still deletes the tasks whose jobs were pruned.
	c.Advance(time.Minute)
	if n, err := b.Jobs().DeleteExpired(bg, c.Now(), 100); err != nil || n != 7 {
		t.Fatalf("DeleteExpired = %d, %v; want 7", n, err)
	}

	// The outbox: at most limit rows, only before the horizon.
	if n, err := p.PruneOutbox(bg, Epoch, 100); err != nil || n != 0 {
		t.Fatalf("PruneOutbox before any row = %d, %v", n, err)
	}
	var total int
	for {
		n, err := p.PruneOutbox(bg, c.Now().Add(time.Millisecond), 3)
		if err != nil || n > 3 {
			t.Fatalf("PruneOutbox(3) = %d, %v", n, err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total == 0 {
		t.Fatal("PruneOutbox deleted nothing")
	}
}

// testPruneMilliseconds: stores keep times in whole milliseconds, and the
// horizons of PruneJobs and PruneOutbox count in them too: a job or an
// outbox row written in the horizon's millisecond is not before it.
func testPruneMilliseconds(t *testing.T, open opener) {
	b, c := open(t)
	p, ok := b.Jobs().(backend.Pruner)
	if !ok {
		t.Skip("the backend is not a backend.Pruner")
	}
	tk := enqueue(t, b, backend.EnqueueOptions{})
	j := claimOne(t, b, c, tk.ID())
	wantErr(t, "Complete", b.Jobs().Complete(bg, j.Lease, textResult, "done"), "ok")
	within := c.Now().Add(999 * time.Microsecond) // the same millisecond
	if n, err := p.PruneJobs(bg, within, 10); err != nil || n != 0 {
		t.Errorf("PruneJobs in the millisecond the task finished = %d, %v; want 0", n, err)
	}
	if n, err := p.PruneOutbox(bg, within, 10); err != nil || n != 0 {
		t.Errorf("PruneOutbox in the millisecond of the rows = %d, %v; want 0", n, err)
	}
	if n, err := p.PruneJobs(bg, c.Now().Add(time.Millisecond), 10); err != nil || n != 1 {
		t.Errorf("PruneJobs a millisecond later = %d, %v; want 1", n, err)
	}
}
