package worker

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// TestHandlerAddedWhileRunning: a job of a kind no handler serves waits,
// unclaimed, while the runtime runs; once a handler of the kind is
// registered on the running runtime, its next claims take the job.
func TestHandlerAddedWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		sum := func(context.Context, *Job, struct{}) (sumOut, error) { return sumOut{Sum: 1}, nil }
		if err := AddHandler(h.rt, "early", sum); err != nil {
			t.Fatal(err)
		}
		late := h.enqueue(t, testOrigin(t, "late", `{}`, sumSchema), 3)
		h.start()
		defer h.stop(t)
		synctest.Wait()
		if j := h.job(t, late); j.status != task.Working || len(j.claimTimes) != 0 || j.state != memory.JobAvailable {
			t.Fatalf("the job of a kind with no handler: %+v, want it available and never claimed", j)
		}
		if err := AddHandler(h.rt, "late", sum); err != nil {
			t.Fatal(err)
		}
		if j := h.waitStatus(t, late, task.Completed); len(j.claimTimes) != 1 {
			t.Errorf("claimed %d times, want once", len(j.claimTimes))
		}
		early := h.enqueue(t, testOrigin(t, "early", `{}`, sumSchema), 3)
		h.waitStatus(t, early, task.Completed)
	})
}
