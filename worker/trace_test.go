package worker

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// recordingTracer is a Tracer that writes down what the runtime tells it,
// one line per call, across runs.
type recordingTracer struct {
	mu    sync.Mutex
	lines []tracedLine
}

// tracedLine is one call of a run, with the run's attempt.
type tracedLine struct {
	attempt int64
	text    string
}

func (r *recordingTracer) StartRun(ctx context.Context, tr TracedRun) (context.Context, RunSpan) {
	r.add(tr.Attempt, "start "+tr.Kind)
	return ctx, recordingSpan{r, tr.Attempt}
}

func (r *recordingTracer) add(attempt int64, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, tracedLine{attempt, s})
}

// log returns the calls run by run, in attempt order, each run's calls in
// the order they were made: two runs of one job may overlap (a run whose
// lease was taken back ends while the rescued job runs again).
func (r *recordingTracer) log() []string {
	r.mu.Lock()
	lines := slices.Clone(r.lines)
	r.mu.Unlock()
	slices.SortStableFunc(lines, func(a, b tracedLine) int { return cmp.Compare(a.attempt, b.attempt) })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

type recordingSpan struct {
	r       *recordingTracer
	attempt int64
}

func (s recordingSpan) Progress()                { s.r.add(s.attempt, "progress") }
func (s recordingSpan) Failed(c FailureCategory) { s.r.add(s.attempt, "failed "+string(c)) }
func (s recordingSpan) LeaseLost()               { s.r.add(s.attempt, "lease lost") }
func (s recordingSpan) End()                     { s.r.add(s.attempt, "end") }
func (s recordingSpan) Wrote(t Transition, err error) {
	switch {
	case err == nil:
		s.r.add(s.attempt, "wrote "+string(t))
	case errors.Is(err, backend.ErrLeaseLost):
		s.r.add(s.attempt, "write lease lost "+string(t))
	default:
		s.r.add(s.attempt, "write failed "+string(t))
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
		h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3)
		h.start()
		<-b.started
		h.rescueElsewhere(t)
		<-b.returned
		<-b.started // the rescued job runs again
		h.stop(t)   // the rerun returns a result when cancelled: it completes
		want := []string{"start slow", "lease lost", "end", "start slow", "wrote completed", "end"}
		if diff := gocmp.Diff(want, tr.log()); diff != "" {
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
		h.enqueue(t, testOrigin(t, "flaky", `{}`, sumSchema), 3)
		h.start()
		<-rerun
		synctest.Wait() // the rerun's final write
		h.stop(t)
		want := []string{"start flaky", "failed handler_error", "wrote retried", "end", "start flaky", "wrote completed", "end"}
		if diff := gocmp.Diff(want, tr.log()); diff != "" {
			t.Errorf("tracer calls (-want +got):\n%s", diff)
		}
	})
}
