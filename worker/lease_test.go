package worker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// blockingHandler reports its start and the cause of its context's
// cancellation, then returns ctx.Err() (or a result when withResult is set).
type blockingHandler struct {
	started    chan struct{}
	returned   chan struct{}
	withResult bool
	runs       atomic.Int32

	mu    sync.Mutex
	cause error
}

func (b *blockingHandler) lastCause() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cause
}

func newBlockingHandler(withResult bool) *blockingHandler {
	return &blockingHandler{started: make(chan struct{}, 10), returned: make(chan struct{}, 10), withResult: withResult}
}

func (b *blockingHandler) handle(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
	b.runs.Add(1)
	b.started <- struct{}{}
	defer func() { b.returned <- struct{}{} }()
	<-ctx.Done()
	b.mu.Lock()
	b.cause = context.Cause(ctx)
	b.mu.Unlock()
	if b.withResult {
		return sumOut{Sum: 42}, nil
	}
	return sumOut{}, ctx.Err()
}

func TestCancelDuringRun(t *testing.T) {
	for _, viaHint := range []bool{true, false} {
		t.Run("hint="+strconv.FormatBool(viaHint), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := Options{}
				if !viaHint {
					opts.Events = noHints{} // the store publishes nothing: heartbeats find the intent
				}
				h := newHarness(t, opts)
				b := newBlockingHandler(false)
				if err := AddHandler(h.rt, "slow", b.handle); err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
				h.start()
				<-b.started
				t0 := time.Now()
				h.requestCancel(t, id)
				j := h.waitStatus(t, id, task.Cancelled)
				elapsed := time.Since(t0)
				h.stop(t)

				if !errors.Is(b.lastCause(), ErrCancelRequested) {
					t.Errorf("cause = %v", b.lastCause())
				}
				if viaHint && elapsed > 100*time.Millisecond {
					t.Errorf("a hint took %v to cancel", elapsed)
				}
				if !viaHint && elapsed > 10*time.Second+100*time.Millisecond {
					t.Errorf("cancelled after %v, want within one heartbeat (10s)", elapsed)
				}
				if j.message != "Cancelled at the client's request." {
					t.Errorf("message = %q", j.message)
				}
				if diff := cmp.Diff([]string{"Cancel"}, h.store.writeLog()); diff != "" {
					t.Errorf("writes (-want +got):\n%s", diff)
				}
				if n := h.metrics.transition("slow", TransitionCancelled); n != 1 {
					t.Errorf("cancelled = %d", n)
				}
			})
		})
	}
}

func TestCompletionWinsOverCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		b := newBlockingHandler(true)
		if err := AddHandler(h.rt, "slow", b.handle); err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
		h.start()
		<-b.started
		h.requestCancel(t, id)
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if !errors.Is(b.lastCause(), ErrCancelRequested) || string(j.result.StructuredContent) != `{"sum":42}` {
			t.Errorf("cause %v result %s", b.lastCause(), j.result.StructuredContent)
		}
	})
}

func TestCancelBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		b := newBlockingHandler(false)
		if err := AddHandler(h.rt, "slow", b.handle); err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
		h.requestCancel(t, id)
		h.start()
		h.waitStatus(t, id, task.Cancelled)
		h.stop(t)
		if n := b.runs.Load(); n != 0 {
			t.Errorf("handler ran %d times", n)
		}
	})
}

func TestLeaseLost(t *testing.T) {
	for _, how := range []string{"store expired the lease", "heartbeats keep failing"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				b := newBlockingHandler(true) // returns a result that must be dropped
				if err := AddHandler(h.rt, "slow", b.handle); err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
				h.start()
				<-b.started
				t0 := time.Now()
				if how == "store expired the lease" {
					// The store ends the lease: the next heartbeat is
					// refused.
					h.rescueElsewhere(t)
				} else {
					h.store.setHeartbeatErr(errors.New("db down"))
				}
				<-b.returned
				lostAfter := time.Since(t0)
				synctest.Wait()
				if !errors.Is(b.lastCause(), backend.ErrLeaseLost) {
					t.Errorf("cause = %v", b.lastCause())
				}
				if how == "heartbeats keep failing" && (lostAfter < 20*time.Second || lostAfter > 31*time.Second) {
					t.Errorf("lease given up after %v, want at the local deadline (30s lease)", lostAfter)
				}
				if w := h.store.writeLog(); len(w) != 0 {
					t.Errorf("writes after a lost lease: %v", w)
				}
				if n := h.metrics.transition("slow", TransitionLeaseLost); n != 1 {
					t.Errorf("lease_lost = %d", n)
				}
				if j := h.job(t, id); j.status != task.Working {
					t.Errorf("status %s", j.status)
				}

				// The rescuer makes the job available again (possibly while
				// the first run was still winding down) and it runs anew.
				h.store.setHeartbeatErr(nil)
				<-b.started
				if j := h.job(t, id); j.attempt != 2 || j.failures != 0 || j.interrupted != 1 {
					t.Errorf("rerun: attempt %d failures %d interrupted runs %d", j.attempt, j.failures, j.interrupted)
				}
				h.stop(t) // the rerun returns a result when cancelled: it completes
				if diff := cmp.Diff([]string{"Complete"}, h.store.writeLog()); diff != "" {
					t.Errorf("writes (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestLongHandlerKeepsItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		err := AddHandler(h.rt, "long", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			time.Sleep(100 * time.Second) // three leases
			return sumOut{Sum: 1}, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "long", `{}`, sumSchema), 3)
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if _, _, beats := h.store.calls(); beats < 9 || j.attempt != 1 {
			t.Errorf("%d heartbeats, attempt %d", beats, j.attempt)
		}
	})
}

func TestRescuedJobRunsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		if err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
			return sumOut{Sum: 5}, nil
		}); err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3)
		h.claimElsewhere(t, id, 20*time.Second) // a worker that died
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if j.attempt != 2 || j.failures != 0 || j.interrupted != 1 {
			t.Errorf("attempt %d failures %d interrupted runs %d", j.attempt, j.failures, j.interrupted)
		}
		if n := h.metrics.maintenance[TransitionRescued]; n != 1 {
			t.Errorf("rescued = %d", n)
		}
		rescues, cleanups, _ := h.store.calls()
		if rescues < 2 || cleanups < 1 {
			t.Errorf("%d rescue and %d cleanup passes", rescues, cleanups)
		}
	})
}
