package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/task"
)

// GaugesBackend is a backend.Store that reports gauges.
type GaugesBackend interface {
	backend.Store
	backend.GaugeSource
}

// RunGauges checks a backend's backend.GaugeSource: a snapshot counts tasks by
// status, unfinished jobs by kind and state (due, retrying, scheduled,
// running, parked for input), the age of the oldest due job by the
// store's clock, and live sessions; finished jobs, expired tasks' jobs and
// expired sessions count in no job state or session. A backend that is
// also a backend.QueueGaugeSource reads the same snapshot from QueueGauges,
// without the counts of tasks.
func RunGauges(t *testing.T, open func(t *testing.T, now func() time.Time) GaugesBackend) {
	ctx := context.Background()
	c := NewClock(Epoch)
	b := open(t, c.Now)

	empty, err := b.Gauges(ctx)
	if err != nil {
		t.Fatalf("Gauges of an empty store: %v", err)
	}
	want := backend.Gauges{Tasks: map[task.Status]int{}, Jobs: map[backend.JobKey]int{}}
	if d := cmp.Diff(want, empty); d != "" {
		t.Errorf("empty store (-want +got):\n%s", d)
	}

	enqueue(t, b, backend.EnqueueOptions{}) // due at Epoch, never claimed
	if _, err := b.Enqueue(ctx, creation(t, endpointA, tenantA, toolA, `{"n":2}`),
		backend.EnqueueOptions{TTL: 10 * time.Second}); err != nil { // expires before the snapshot
		t.Fatal(err)
	}
	c.Advance(30 * time.Second)
	if _, err := b.Enqueue(ctx, creation(t, endpointA, tenantA, toolA, `{"n":3}`),
		backend.EnqueueOptions{RunAt: c.Now().Add(time.Hour), Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := b.Enqueue(ctx, creation(t, endpointB, tenantB, toolB, fmt.Sprintf(`{"i":%d}`, i)), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := b.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Kinds: []string{toolB}, Limit: 4, Lease: lease, Now: c.Now()})
	if err != nil || len(jobs) != 4 {
		t.Fatalf("Claim: %d jobs, %v; want 4", len(jobs), err)
	}
	// jobs[0] stays running.
	if err := b.Jobs().Retry(ctx, jobs[1].Lease, c.Now().Add(time.Minute), "retrying", ""); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if err := b.Jobs().RequestInput(ctx, jobs[2].Lease, mcp.InputRequests{"colour": reqElicit}, ""); err != nil {
		t.Fatalf("RequestInput: %v", err)
	}
	if err := b.Jobs().Complete(ctx, jobs[3].Lease, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, ""); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	now := c.Now()
	for i, ends := range []time.Time{now.Add(time.Hour), now.Add(-time.Second)} { // one live, one expired
		r := session.Record{
			Key:      strings.Repeat(string(rune('a'+i)), 64),
			Endpoint: endpointA, Tenant: tenantA, Principal: "user-" + tenantA, ProtocolVersion: "2025-11-25",
			CreatedAt: now.Add(-2 * time.Hour), LastUsedAt: now.Add(-2 * time.Hour), ExpiresAt: ends, IdleTimeout: 3 * time.Hour,
		}
		if err := b.Sessions().Create(ctx, r, session.Limits{}, r.CreatedAt); err != nil {
			t.Fatalf("creating a session: %v", err)
		}
	}

	got, err := b.Gauges(ctx)
	if err != nil {
		t.Fatalf("Gauges: %v", err)
	}
	want = backend.Gauges{
		Tasks: map[task.Status]int{task.Working: 5, task.InputRequired: 1, task.Completed: 1},
		Jobs: map[backend.JobKey]int{
			{Queue: backend.DefaultQueue, Kind: toolA, State: backend.JobAvailable}:    1,
			{Queue: "mail", Kind: toolA, State: backend.JobScheduled}:                  1,
			{Queue: backend.DefaultQueue, Kind: toolB, State: backend.JobRunning}:      1,
			{Queue: backend.DefaultQueue, Kind: toolB, State: backend.JobRetryWaiting}: 1,
			{Queue: backend.DefaultQueue, Kind: toolB, State: backend.JobInputWaiting}: 1,
		},
		OldestAvailable: 30 * time.Second,
		Sessions:        1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Gauges (-want +got):\n%s", d)
	}
	if q, ok := b.(backend.QueueGaugeSource); ok {
		got, err := q.QueueGauges(ctx)
		if err != nil {
			t.Fatalf("QueueGauges: %v", err)
		}
		want := want
		want.Tasks = nil
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("QueueGauges (-want +got):\n%s", d)
		}
	}

	// The retried job is due when its backoff ends, and from then on the
	// oldest due job is still the first one.
	c.Advance(2 * time.Minute)
	got, err = b.Gauges(ctx)
	if err != nil {
		t.Fatalf("Gauges: %v", err)
	}
	if n := got.Jobs[backend.JobKey{Queue: backend.DefaultQueue, Kind: toolB, State: backend.JobAvailable}]; n != 1 {
		t.Errorf("after the backoff, %d available %s jobs, want 1", n, toolB)
	}
	if got.OldestAvailable != 150*time.Second {
		t.Errorf("OldestAvailable = %v, want 2m30s", got.OldestAvailable)
	}

	// The expired task counts until it is deleted.
	if n, err := b.Jobs().DeleteExpired(ctx, c.Now(), 10); err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	got, err = b.Gauges(ctx)
	if err != nil {
		t.Fatalf("Gauges: %v", err)
	}
	wantTasks := map[task.Status]int{task.Working: 4, task.InputRequired: 1, task.Completed: 1}
	if d := cmp.Diff(wantTasks, got.Tasks); d != "" {
		t.Errorf("Tasks after the expired one's deletion (-want +got):\n%s", d)
	}
}
