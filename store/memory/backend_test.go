package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// What the shared store suite cannot see: how the two kinds of task (made
// by Create, made by Enqueue) live side by side, the capacity bound on
// enqueued tasks, and the job state the manager reports.

func enqueue(t testing.TB, m *memory.Manager, opts backend.EnqueueOptions) task.Task {
	t.Helper()
	tk, err := m.Enqueue(context.Background(), creation(t, endpoint, tenant), opts)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return tk
}

// TestTrustedMethodsRefuseEnqueuedTasks: only its job's lease changes an
// enqueued task; Find and CancelRequested read any task; a task Create made
// has no job and is never claimed.
func TestTrustedMethodsRefuseEnqueuedTasks(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	ctx := context.Background()
	made := create(t, m)
	queued := enqueue(t, m, backend.EnqueueOptions{})
	id := queued.ID()

	checks := map[string]error{}
	_, checks["MarkWorking"] = m.MarkWorking(id, "")
	_, checks["ReportProgress"] = m.ReportProgress(id, "", nil)
	_, checks["RequestInput"] = m.RequestInput(id, mcp.InputRequests{"k": formRequest()}, "")
	_, checks["TakeInputResponses"] = m.TakeInputResponses(id)
	_, checks["Complete"] = m.Complete(id, &mcp.CallToolResult{}, "")
	_, checks["Fail"] = m.Fail(id, mcp.InternalError(), "")
	_, checks["Cancel"] = m.Cancel(id, "")
	for op, err := range checks {
		if !errors.Is(err, memory.ErrEnqueued) {
			t.Errorf("%s of an enqueued task = %v, want ErrEnqueued", op, err)
		}
	}
	if diff := cmp.Diff(view(queued), view(find(t, m, id))); diff != "" {
		t.Errorf("refused calls changed the task (-want +got):\n%s", diff)
	}
	if err := m.RequestCancel(ctx, rc(id)); err != nil {
		t.Fatal(err)
	}
	if yes, err := m.CancelRequested(id); !yes || err != nil {
		t.Errorf("CancelRequested = %v, %v", yes, err)
	}

	jobs, err := m.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute, Now: t0})
	if err != nil || len(jobs) != 1 || jobs[0].TaskID != id || !jobs[0].CancelRequested {
		t.Fatalf("Claim = %+v, %v; want only the enqueued task's job, with its cancel intent", jobs, err)
	}
	if _, ok := m.Job(made.ID()); ok {
		t.Error("a task Create made has a job")
	}
	if _, err := m.MarkWorking(made.ID(), "still mine"); err != nil {
		t.Errorf("MarkWorking of a task Create made: %v", err)
	}
}

// TestJob: Job reports the job's state and counters as the runtime moves
// it, until the task is deleted.
func TestJob(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{})
	ctx := context.Background()
	tk := enqueue(t, m, backend.EnqueueOptions{MaxAttempts: 3, TTL: time.Minute, RunAt: t0.Add(time.Second)})
	job := func() memory.JobInfo {
		t.Helper()
		j, ok := m.Job(tk.ID())
		if !ok {
			t.Fatal("Job: not found")
		}
		return j
	}
	want := memory.JobInfo{State: memory.JobAvailable, Kind: "report", MaxAttempts: 3, RunAt: t0.Add(time.Second)}
	if diff := cmp.Diff(want, job()); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
	c.Advance(time.Second)
	claim := func() backend.JobRow {
		t.Helper()
		jobs, err := m.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w1", Limit: 1, Lease: 10 * time.Second, Now: c.Now()})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %d jobs, %v", len(jobs), err)
		}
		return jobs[0]
	}
	l := claim().Lease
	want.State, want.Attempt, want.Worker, want.LeaseExpires = memory.JobRunning, 1, "w1", c.Now().Add(10*time.Second)
	if diff := cmp.Diff(want, job()); diff != "" {
		t.Errorf("claimed (-want +got):\n%s", diff)
	}
	if err := m.Jobs().Retry(ctx, l, c.Now().Add(time.Second), "again", ""); err != nil {
		t.Fatal(err)
	}
	want.State, want.Failures, want.Worker, want.LeaseExpires, want.RunAt = memory.JobAvailable, 1, "", time.Time{}, c.Now().Add(time.Second)
	if diff := cmp.Diff(want, job()); diff != "" {
		t.Errorf("retried (-want +got):\n%s", diff)
	}
	c.Advance(time.Second)
	l = claim().Lease
	if err := m.Jobs().RequestInput(ctx, l, mcp.InputRequests{"k": formRequest()}, "asking"); err != nil {
		t.Fatal(err)
	}
	if got := job(); got.State != memory.JobAwaitingInput || got.Attempt != 2 {
		t.Errorf("asking: %+v", got)
	}
	c.Advance(time.Minute) // the task expires: its job stays until it is deleted
	if got := job(); got.State != memory.JobAwaitingInput {
		t.Errorf("expired: %+v", got)
	}
	if n, err := m.Jobs().DeleteExpired(ctx, c.Now(), 10); n != 1 || err != nil {
		t.Fatalf("DeleteExpired = %d, %v", n, err)
	}
	if _, ok := m.Job(tk.ID()); ok {
		t.Error("Job of a deleted task: found")
	}
}

// TestEnqueueCapacity: enqueued and created tasks share the capacity; a
// creation at capacity deletes the expired tasks first; a batch that does
// not fit creates nothing.
func TestEnqueueCapacity(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{Capacity: 3, TTL: time.Minute})
	ctx := context.Background()
	short := enqueue(t, m, backend.EnqueueOptions{})
	create(t, m)
	enqueue(t, m, backend.EnqueueOptions{TTL: -1})
	if _, err := m.Enqueue(ctx, creation(t, endpoint, tenant), backend.EnqueueOptions{}); !errors.Is(err, memory.ErrFull) {
		t.Fatalf("Enqueue at capacity = %v, want ErrFull", err)
	}
	c.Advance(time.Minute) // short and the created task expire
	if _, ok := m.Job(short.ID()); !ok {
		t.Fatal("an expired task was deleted before anything needed its room")
	}
	batch := func(n int) ([]task.Task, error) {
		items := make([]backend.BatchItem, n)
		for i := range items {
			items[i] = backend.BatchItem{Creation: creation(t, endpoint, tenant)}
		}
		return m.EnqueueBatch(ctx, items)
	}
	if snaps, err := batch(3); !errors.Is(err, memory.ErrFull) || snaps != nil {
		t.Fatalf("EnqueueBatch of 3 with room for 2 = %d tasks, %v; want ErrFull", len(snaps), err)
	}
	if _, ok := m.Job(short.ID()); ok {
		t.Error("the expired task was kept although a creation needed its room")
	}
	if snaps, err := batch(2); err != nil || len(snaps) != 2 {
		t.Fatalf("EnqueueBatch of 2 = %d tasks, %v", len(snaps), err)
	}
	if n, err := m.Jobs().DeleteExpired(ctx, c.Now(), 10); n != 0 || err != nil {
		t.Errorf("DeleteExpired after the sweep = %d, %v; want 0", n, err)
	}
}

// TestStoreParts: the manager's session store is one for its lifetime, and
// Migrate and Close do nothing.
func TestStoreParts(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	if m.Sessions() == nil || m.Sessions() != m.Sessions() {
		t.Error("Sessions must return the same session store on every call")
	}
	if err := m.Migrate(context.Background()); err != nil {
		t.Errorf("Migrate: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := memory.New(memory.Options{MaxSessions: -1}); err == nil {
		t.Error("a negative MaxSessions was accepted")
	}
}
