package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// TestLivenessSessionLost: an instance whose lock session the server ended
// (a database restart, a terminated backend) while the process lives takes
// its lock again at its next pass, and another instance's single pass in
// between takes none of its jobs: an instance is dead only when two passes
// of a rescuer, its own lock held between them, find its lock free. Once
// the instance is gone for good, they do.
func TestLivenessSessionLost(t *testing.T) {
	requireDB(t)
	ctx := context.Background()
	s := openStore(t, newSchema(t), nil)
	jobs := s.Jobs()
	holdOne := func() *instanceHold {
		h, err := jobs.(backend.LivenessRescuer).HoldInstance(ctx)
		if err != nil {
			t.Fatalf("HoldInstance: %v", err)
		}
		t.Cleanup(func() { h.Close() })
		return h.(*instanceHold)
	}
	a, b := holdOne(), holdOne()
	if _, err := s.Enqueue(ctx, creation(t, "t", "tool", `{}`), backend.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	claimed, err := jobs.Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute, Instance: a.ID()})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim: %d jobs, %v", len(claimed), err)
	}
	pass := func(h *instanceHold) int {
		t.Helper()
		n, err := h.RescueDead(ctx, backend.RescueParams{Limit: 10, MaxInterruptedRuns: 5})
		if err != nil {
			t.Fatalf("RescueDead: %v", err)
		}
		return n
	}

	// The server ends a's session; pg_terminate_backend waits (up to 5 s)
	// for the backend to exit, and its lock with it.
	var ended bool
	if err := s.pool.QueryRow(ctx, `SELECT bool_and(pg_terminate_backend(pid, 5000)) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND classid = $1::bigint::oid AND objid = $2::bigint::oid`,
		a.key>>31, a.key&(1<<31-1)).Scan(&ended); err != nil || !ended {
		t.Fatalf("terminating the hold's session: %v, %v", ended, err)
	}
	if n := pass(b); n != 0 {
		t.Fatalf("a first pass took %d jobs of an instance whose session just ended", n)
	}
	if n := pass(a); n != 0 || a.ID() == "" {
		t.Fatalf("the instance's own pass: %d jobs, ID %q; want its lock taken again", n, a.ID())
	}
	for range 2 {
		if n := pass(b); n != 0 {
			t.Fatalf("a pass took %d jobs of a live instance", n)
		}
	}
	if err := jobs.Heartbeat(ctx, claimed[0].Lease, time.Minute); err != nil {
		t.Fatalf("Heartbeat of the live run: %v", err)
	}

	a.Close()
	if n := pass(b) + pass(b); n != 1 {
		t.Fatalf("two passes after the instance died took %d jobs, want 1", n)
	}
}
