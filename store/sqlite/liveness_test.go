package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestLivenessDoubt: RescueDead takes a dead instance's jobs only when its
// lock file says this host and can be locked; a lock file of another host
// or a missing one leaves the jobs to their leases. A start removes the
// lock files that name no running job, and keeps those that do.
func TestLivenessDoubt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, sqlite.Options{Path: path})
	jobs := s.Jobs()
	lr := jobs.(backend.LivenessRescuer)
	holdOne := func() backend.InstanceHold {
		h, err := lr.HoldInstance(ctx)
		if err != nil {
			t.Fatalf("HoldInstance: %v", err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	dir := path + ".instances"
	lockFile := func(h backend.InstanceHold) string { return filepath.Join(dir, h.ID()+".lock") }
	claimAs := func(h backend.InstanceHold) {
		if _, err := s.Enqueue(ctx, creation(t), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := jobs.Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute, Instance: h.ID()})
		if err != nil || len(got) != 1 {
			t.Fatalf("Claim: %d jobs, %v", len(got), err)
		}
	}
	foreign, missing, dead, idle := holdOne(), holdOne(), holdOne(), holdOne()
	for _, h := range []backend.InstanceHold{foreign, missing, dead} {
		claimAs(h)
	}
	if err := os.WriteFile(lockFile(foreign), []byte("another-host"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, h := range []backend.InstanceHold{foreign, missing, dead, idle} {
		h.Close()
	}
	if err := os.Remove(lockFile(missing)); err != nil {
		t.Fatal(err)
	}

	rescuer := holdOne() // its start sweeps idle's file, which names no job
	n, err := rescuer.RescueDead(ctx, backend.RescueParams{Limit: 10, MaxInterruptedRuns: 5})
	if err != nil || n != 1 {
		t.Fatalf("RescueDead = %d, %v; want the dead instance's job only", n, err)
	}
	if n, err := rescuer.RescueDead(ctx, backend.RescueParams{Limit: 10, MaxInterruptedRuns: 5}); err != nil || n != 0 {
		t.Fatalf("second RescueDead = %d, %v; want 0", n, err)
	}
	exists := func(h backend.InstanceHold) bool {
		_, err := os.Stat(lockFile(h))
		return !errors.Is(err, os.ErrNotExist)
	}
	type files struct{ Foreign, Dead, Idle, Rescuer bool }
	if d := cmp.Diff(files{Foreign: true, Rescuer: true},
		files{exists(foreign), exists(dead), exists(idle), exists(rescuer)}); d != "" {
		t.Errorf("lock files kept (-want +got):\n%s", d)
	}
}

// TestLivenessMemoryPath: a MemoryPath database holds no instances.
func TestLivenessMemoryPath(t *testing.T) {
	s := open(t, sqlite.Options{Path: sqlite.MemoryPath})
	if _, err := s.Jobs().(backend.LivenessRescuer).HoldInstance(context.Background()); !errors.Is(err, backend.ErrLivenessUnsupported) {
		t.Fatalf("HoldInstance: %v, want ErrLivenessUnsupported", err)
	}
}
