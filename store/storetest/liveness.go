package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// holder returns the LivenessRescuer of b's JobStore. The suite requires
// one, as it requires a Checkpointer.
func holder(t testing.TB, b backend.Store) backend.LivenessRescuer {
	t.Helper()
	lr, ok := b.Jobs().(backend.LivenessRescuer)
	if !ok {
		t.Fatal("the backend's JobStore does not implement backend.LivenessRescuer")
	}
	return lr
}

// hold takes an instance hold of b, closed at the end of the test. A store
// that cannot hold one in the suite's configuration skips the test.
func hold(t *testing.T, b backend.Store) backend.InstanceHold {
	t.Helper()
	h, err := holder(t, b).HoldInstance(context.Background())
	if errors.Is(err, backend.ErrLivenessUnsupported) {
		t.Skip("the backend holds no instances here")
	}
	if err != nil {
		t.Fatalf("HoldInstance: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// claimAs claims the job of task id for instance.
func claimAs(t testing.TB, b backend.Store, c *Clock, instance, id string) backend.JobRow {
	t.Helper()
	jobs, err := b.Jobs().Claim(context.Background(),
		backend.ClaimParams{Worker: "w", Limit: 1, Lease: lease, Now: c.Now(), Instance: instance})
	if err != nil || len(jobs) != 1 || jobs[0].TaskID != id {
		t.Fatalf("Claim as an instance: %d jobs, %v; want the job of %s", len(jobs), err, id)
	}
	return jobs[0]
}

// rescueDead runs passes of h until one takes jobs or three passes took
// none (a store may need two passes to count an instance dead), and
// returns the jobs taken.
func rescueDead(t testing.TB, h backend.InstanceHold, c *Clock) int {
	t.Helper()
	for range 3 {
		n, err := h.RescueDead(bg, rescueParams(c, 10))
		if err != nil {
			t.Fatalf("RescueDead: %v", err)
		}
		if n > 0 {
			return n
		}
	}
	return 0
}

// testLiveness: the jobs of a live instance are never taken by RescueDead,
// nor those claimed without an instance, nor the rescuer's own; a dead
// (closed) instance's are, once, counted as an interrupted run with the
// task's message backend.InterruptedMessage, long before their lease
// expires, and the dead run's late writes are refused (fencing). A lease
// expiry gives the same message.
func testLiveness(t *testing.T, open opener) {
	b, c := open(t)
	dead, live := hold(t, b), hold(t, b)
	if dead.ID() == "" || dead.ID() == live.ID() {
		t.Fatalf("instance IDs %q and %q", dead.ID(), live.ID())
	}
	tDead := enqueue(t, b, backend.EnqueueOptions{})
	jDead := claimAs(t, b, c, dead.ID(), tDead.ID())
	tLive := enqueue(t, b, backend.EnqueueOptions{})
	jLive := claimAs(t, b, c, live.ID(), tLive.ID())
	tNone := enqueue(t, b, backend.EnqueueOptions{})
	jNone := claimOne(t, b, c, tNone.ID())
	if err := reporter(b).ReportProgress(bg, jDead.Lease, "page 10 of 20", nil); err != nil {
		t.Fatal(err)
	}

	if n := rescueDead(t, live, c); n != 0 {
		t.Fatalf("RescueDead took %d jobs of live instances", n)
	}
	if n := rescueDead(t, dead, c); n != 0 {
		t.Fatalf("RescueDead took %d jobs of live instances (its own included)", n)
	}
	if err := dead.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := rescueDead(t, live, c); n != 1 {
		t.Fatalf("RescueDead after an instance died took %d jobs, want 1", n)
	}
	if n := rescueDead(t, live, c); n != 0 {
		t.Fatalf("a second RescueDead took %d jobs, want 0", n)
	}
	if got := mustFind(t, b, tDead.ID()).StatusMessage(); got != backend.InterruptedMessage {
		t.Errorf("message of the interrupted task %q, want %q", got, backend.InterruptedMessage)
	}

	// The dead run is fenced off.
	if err := b.Jobs().Heartbeat(bg, jDead.Lease, lease); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("Heartbeat of the dead run: %v, want ErrLeaseLost", err)
	}
	if err := reporter(b).ReportProgress(bg, jDead.Lease, "page 11 of 20", nil); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("ReportProgress of the dead run: %v, want ErrLeaseLost", err)
	}
	if !saveCheckpoint(t, b, jDead.Lease, []byte(`{"page":11}`)) {
		t.Error("a checkpoint of the dead run was written")
	}
	if err := b.Jobs().Complete(bg, jDead.Lease, textResult, ""); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("Complete of the dead run: %v, want ErrLeaseLost", err)
	}
	// The others keep their claims.
	for _, l := range []backend.Lease{jLive.Lease, jNone.Lease} {
		if err := b.Jobs().Heartbeat(bg, l, lease); err != nil {
			t.Errorf("Heartbeat of a live run: %v", err)
		}
	}

	again := claimAs(t, b, c, live.ID(), tDead.ID())
	type counts struct {
		Later                     bool
		InterruptedRuns, Failures int
	}
	if d := cmp.Diff(counts{true, 1, 0}, counts{again.Attempt > jDead.Attempt, again.InterruptedRuns, again.Failures}); d != "" {
		t.Errorf("the claim after the rescue (-want +got):\n%s", d)
	}
	if err := reporter(b).ReportProgress(bg, again.Lease, "page 11 of 20", nil); err != nil {
		t.Fatal(err)
	}
	if got := mustFind(t, b, tDead.ID()).StatusMessage(); got != "page 11 of 20" {
		t.Errorf("message after the next run reported %q", got)
	}

	// A lease expiry says the same.
	c.Advance(lease)
	if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 3 {
		t.Fatalf("RescueExpired = %d, %v; want 3", n, err)
	}
	if got := mustFind(t, b, tNone.ID()).StatusMessage(); got != backend.InterruptedMessage {
		t.Errorf("message after a lease expiry %q, want %q", got, backend.InterruptedMessage)
	}
}
