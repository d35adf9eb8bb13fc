package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// recordingTracer is a Tracer that writes down what the runtime tells it,
// one line per call, across runs.
type recordingTracer struct {
	mu    sync.Mutex
	lines []string
}

func (r *recordingTracer) StartRun(ctx context.Context, tr TracedRun) (context.Context, RunSpan) {
	r.add("start " + tr.Kind)
	return ctx, recordingSpan{r}
}

func (r *recordingTracer) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, s)
}

func (r *recordingTracer) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

type recordingSpan struct{ r *recordingTracer }

func (s recordingSpan) Progress()                { s.r.add("progress") }
func (s recordingSpan) Failed(c FailureCategory) { s.r.add("failed " + string(c)) }
func (s recordingSpan) LeaseLost()               { s.r.add("lease lost") }
func (s recordingSpan) End()                     { s.r.add("end") }
func (s recordingSpan) Wrote(t Transition, err error) {
	switch {
	case err == nil:
		s.r.add("wrote " + string(t))
	case errors.Is(err, backend.ErrLeaseLost):
		s.r.add("write lease lost " + string(t))
	default:
		s.r.add("write failed " + string(t))
	}
}

// TestTracerSeesLeaseLoss checks what the Tracer is told of a run whose
// lease the store expires while the handler runs: the loss, no final
// write, and the end of the span; then the rerun and its completion.
func TestTracerSeesLeaseLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &recordingTracer{}
		h := newHarness(t, Options{Tracer: tr})
		b := newBlockingHandler(true)
		if err := AddHandler(h.rt, "slow", b.handle); err != nil {
			t.Fatal(err)
		}
		id := h.store.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
		h.start()
		<-b.started
		h.store.expireLease(id)
		<-b.returned
		<-b.started // the rescued job runs again
		h.stop(t)   // the rerun returns a result when cancelled: it completes
		want := []string{"start slow", "lease lost", "end", "start slow", "wrote completed", "end"}
		if diff := cmp.Diff(want, tr.log()); diff != "" {
			t.Errorf("tracer calls (-want +got):\n%s", diff)
		}
	})
}

// TestTracerSeesRetry checks the calls of a run that fails and is
// retried, then of the run that completes.
func TestTracerSeesRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &recordingTracer{}
		h := newHarness(t, Options{Tracer: tr, Backoff: func(int) time.Duration { return 0 }})
		rerun := make(chan struct{})
		if err := AddHandler(h.rt, "flaky", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			if job.Failures() == 0 {
				return sumOut{}, errors.New("first run fails")
			}
			close(rerun)
			return sumOut{Sum: 1}, nil
		}); err != nil {
			t.Fatal(err)
		}
		h.store.enqueue(t, testOrigin(t, "flaky", `{}`, sumSchema), 3)
		h.start()
		<-rerun
		synctest.Wait() // the rerun's final write
		h.stop(t)
		want := []string{"start flaky", "failed handler_error", "wrote retried", "end", "start flaky", "wrote completed", "end"}
		if diff := cmp.Diff(want, tr.log()); diff != "" {
			t.Errorf("tracer calls (-want +got):\n%s", diff)
		}
	})
}
