package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// testOperatorFailures checks what a task's history keeps of failed runs:
// the failure category passed to Retry and Fail on the retry and failed
// events of that claim (bounded: an unknown one is recorded as
// backend.FailureUnknown, none as ""), and the next run time of a retry
// that left the job queued. A write whose lease was lost records nothing,
// not even on the events of the claim it named.
func testOperatorFailures(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	jobs := b.Jobs()
	enqueue := func(maxAttempts int) string {
		t.Helper()
		tk, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{}`), backend.EnqueueOptions{MaxAttempts: maxAttempts})
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID()
	}
	check := func(name, id string, want []eventShape, wantRunAt []time.Time) {
		t.Helper()
		evs := operatorTask(t, b, id).Events
		if d := cmp.Diff(want, shapes(evs)); d != "" {
			t.Errorf("%s: history (-want +got):\n%s", name, d)
		}
		var runAt []time.Time
		for _, e := range evs {
			if e.Kind == backend.EventRetry {
				runAt = append(runAt, e.RunAt)
			}
		}
		if d := cmp.Diff(wantRunAt, runAt); d != "" {
			t.Errorf("%s: run times of the retries (-want +got):\n%s", name, d)
		}
	}

	// Retried twice, then failed for good by the worker's Fail.
	id := enqueue(0)
	j := claimOne(t, b, c, id)
	next := c.Now().Add(time.Minute)
	if err := jobs.Retry(bg, j.Lease, next, "", backend.FailureTimeout); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	j = claimOne(t, b, c, id)
	if err := jobs.Retry(bg, j.Lease, time.Time{}, "", backend.FailurePanic); err != nil {
		t.Fatal(err)
	}
	now := c.Now()
	j = claimOne(t, b, c, id)
	if err := jobs.Fail(bg, j.Lease, toolError, "", backend.FailurePermanent); err != nil {
		t.Fatal(err)
	}
	check("retried, then failed", id, []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventRetry, Attempt: 1, Worker: "w", Message: "failure 1 of 10", Category: backend.FailureTimeout},
		{Kind: backend.EventClaimed, Attempt: 2, Worker: "w"},
		{Kind: backend.EventRetry, Attempt: 2, Worker: "w", Message: "failure 2 of 10", Category: backend.FailurePanic},
		{Kind: backend.EventClaimed, Attempt: 3, Worker: "w"},
		{Kind: backend.EventFailed, Attempt: 3, Category: backend.FailurePermanent},
	}, []time.Time{next, now})

	// The Retry that uses up the attempts fails the task: both its events
	// carry the category, here one outside the set, and it has no next run.
	id = enqueue(2)
	j = claimOne(t, b, c, id)
	if err := jobs.Retry(bg, j.Lease, time.Time{}, "", ""); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, b, c, id)
	if err := jobs.Retry(bg, j.Lease, time.Time{}, "", "disk on fire"); err != nil {
		t.Fatal(err)
	}
	check("attempts used up", id, []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventRetry, Attempt: 1, Worker: "w", Message: "failure 1 of 2"},
		{Kind: backend.EventClaimed, Attempt: 2, Worker: "w"},
		{Kind: backend.EventRetry, Attempt: 2, Worker: "w", Message: "failure 2 of 2", Category: backend.FailureUnknown},
		{Kind: backend.EventFailed, Attempt: 2, Category: backend.FailureUnknown},
	}, []time.Time{c.Now(), {}})

	// A run whose lease expired and whose task the rescue failed: the
	// worker's late Fail is refused and marks none of the claim's events.
	id = enqueue(0)
	j = claimOne(t, b, c, id)
	c.Advance(lease)
	if n, err := jobs.RescueExpired(bg, backend.RescueParams{Now: c.Now(), Limit: 10, MaxInterruptedRuns: 1}); err != nil || n != 1 {
		t.Fatalf("RescueExpired: %d, %v", n, err)
	}
	if err := jobs.Fail(bg, j.Lease, toolError, "", backend.FailureHandlerError); !errors.Is(err, backend.ErrLeaseLost) {
		t.Fatalf("Fail after the rescue: %v, want backend.ErrLeaseLost", err)
	}
	if err := jobs.Retry(bg, j.Lease, time.Time{}, "", backend.FailureHandlerError); !errors.Is(err, backend.ErrLeaseLost) {
		t.Fatalf("Retry after the rescue: %v, want backend.ErrLeaseLost", err)
	}
	check("lease lost", id, []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventLeaseLost, Attempt: 1, Worker: "w", Message: "interrupted run 1"},
		{Kind: backend.EventFailed, Attempt: 1},
	}, nil)
}

// RunOlderRetry checks a durable store during a rollout: code of the
// previous schema version, still writing to the upgraded database, retries
// a job without a failure category. retry makes that retry of the claim l,
// to run again at runAt, with the statements that version runs. Its retry
// event must record the next run time and no category, not the category of
// the job's earlier retry by the current code. open opens an empty store
// on the clock now.
func RunOlderRetry(t *testing.T, open func(t *testing.T, now func() time.Time) OperatorBackend,
	retry func(b OperatorBackend, l backend.Lease, runAt time.Time) error) {
	bg := context.Background()
	c := NewClock(Epoch)
	b := open(t, c.Now)
	id := opFixture(t, b, c, 1)[0]
	if err := b.Jobs().Retry(bg, claimOne(t, b, c, id).Lease, time.Time{}, "", backend.FailureTimeout); err != nil {
		t.Fatal(err)
	}
	runAt := c.Now().Add(time.Hour)
	if err := retry(b, claimOne(t, b, c, id).Lease, runAt); err != nil {
		t.Fatalf("retry of the older version: %v", err)
	}
	type retryShape struct {
		Attempt  int64
		Category backend.FailureCategory
		RunAt    time.Time
	}
	var got []retryShape
	for _, e := range operatorTask(t, b, id).Events {
		if e.Kind == backend.EventRetry {
			got = append(got, retryShape{e.Attempt, e.Category, e.RunAt})
		}
	}
	want := []retryShape{{1, backend.FailureTimeout, c.Now()}, {2, "", runAt}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("retry events (-want +got):\n%s", d)
	}
}
