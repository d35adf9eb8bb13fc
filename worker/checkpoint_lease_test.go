package worker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// TestCheckpointAfterLostLease: once another worker holds the job, a
// checkpoint is refused, the job keeps the last one saved under the lease,
// and the handler is cancelled with cause ErrLeaseLost.
func TestCheckpointAfterLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		saved, lost := make(chan struct{}), make(chan struct{})
		var lateErr, cause error
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			if err := job.Checkpoint(1); err != nil {
				return sumOut{}, err
			}
			close(saved)
			<-lost
			lateErr = job.Checkpoint(2)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return sumOut{}, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		<-saved
		synctest.Wait() // no claim of the runtime's own under way to take the rescued job
		h.rescueElsewhere(t)
		jobs, err := h.mem.Jobs().Claim(context.Background(), backend.ClaimParams{Worker: "elsewhere", Limit: 1,
			Lease: time.Hour, Now: h.clock.Now()})
		if err != nil || len(jobs) != 1 || jobs[0].TaskID != id {
			t.Fatalf("claim elsewhere: %v, %v", jobs, err)
		}
		if got := string(jobs[0].Checkpoint); got != "1" {
			t.Errorf("the other worker's claim carries checkpoint %q, want 1", got)
		}
		close(lost)
		synctest.Wait()
		h.stop(t)
		if !errors.Is(lateErr, backend.ErrLeaseLost) || !errors.Is(cause, backend.ErrLeaseLost) {
			t.Errorf("late checkpoint: %v, handler cause %v; want ErrLeaseLost for both", lateErr, cause)
		}
		if diff := cmp.Diff([]string{"SaveCheckpoints"}, h.store.writeLog()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
}
