package worker

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// TestFastRecovery: a job whose claiming instance died (its hold closed,
// its lease of 30 s far from expired) runs again at once on a runtime with
// the default settings, and only at the lease's expiry with
// DisableFastRecovery; the interrupted task says so meanwhile.
func TestFastRecovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disable  bool
		min, max time.Duration // bounds of the time to completion
	}{
		{"fast", false, 0, 2 * time.Second},
		{"disabled", true, 30 * time.Second, 50 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				id := h.enqueue(t, testOrigin(t, "sum", `{"a":1,"b":2}`, sumSchema), 3)
				jobs := h.mem.Jobs()
				dead, err := jobs.(backend.LivenessRescuer).HoldInstance(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				claimed, err := jobs.Claim(context.Background(), backend.ClaimParams{Worker: "dead", Limit: 1,
					Lease: defaultLease, Now: h.clock.Now(), Instance: dead.ID()})
				if err != nil || len(claimed) != 1 {
					t.Fatalf("Claim: %d jobs, %v", len(claimed), err)
				}
				if err := jobs.(backend.ProgressReporter).ReportProgress(context.Background(), claimed[0].Lease, "page 10", nil); err != nil {
					t.Fatal(err)
				}
				dead.Close() // the process died

				rt, err := New(Options{Store: jobs, Events: h.mem.EventPublisher(), Now: h.clock.Now,
					DisableFastRecovery: tc.disable})
				if err != nil {
					t.Fatal(err)
				}
				var messages []string
				if err := AddHandler(rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
					messages = append(messages, h.job(t, id).message)
					return sumOut{Sum: in.A + in.B}, nil
				}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- rt.Run(ctx) }()
				h.waitStatus(t, id, task.Completed)
				took := time.Since(start)
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if took < tc.min || took > tc.max {
					t.Errorf("completed after %v, want %v to %v", took, tc.min, tc.max)
				}
				if d := cmp.Diff([]string{backend.InterruptedMessage}, messages); d != "" {
					t.Errorf("message seen by the next run (-want +got):\n%s", d)
				}
			})
		})
	}
}
