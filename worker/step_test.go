package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// TestStepResumes: on every backend, a job of three steps whose first
// run fails after two of them re-runs only the third, gets the first two
// results back from the checkpoint, and keeps the results of two steps
// saved at once from two goroutines.
func TestStepResumes(t *testing.T) {
	eachBackend(t, func(t *testing.T, st realStore) {
		r := newRig(t, st, worker.Options{})
		var mu sync.Mutex
		var ran []string
		step := func(ctx context.Context, job *worker.Job, name string, v int) (int, error) {
			return worker.Step(ctx, job, name, func(context.Context) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				ran = append(ran, fmt.Sprintf("attempt %d %s", job.Attempt(), name))
				return v, nil
			})
		}
		must(t, worker.AddHandler(r.rt, "etl", func(ctx context.Context, job *worker.Job, _ struct{}) (crawlOut, error) {
			a, err := step(ctx, job, "extract", 1)
			if err != nil {
				return crawlOut{}, err
			}
			var b, c int
			var errB, errC error
			var wg sync.WaitGroup
			wg.Go(func() { b, errB = step(ctx, job, "transform-a", 10) })
			wg.Go(func() { c, errC = step(ctx, job, "transform-b", 100) })
			wg.Wait()
			if err := errors.Join(errB, errC); err != nil {
				return crawlOut{}, err
			}
			if job.Attempt() == 1 {
				return crawlOut{}, errors.New("the load target went away")
			}
			d, err := step(ctx, job, "load", 1000)
			return crawlOut{Pages: a + b + c + d}, err
		}))
		r.start(t)
		id := r.enqueue(t, "etl", `{}`, backend.EnqueueOptions{MaxAttempts: 2})
		tk := r.wait(t, id, nil)
		if tk.Status() != task.Completed || string(tk.Result().StructuredContent) != `{"pages":1111}` {
			t.Fatalf("task %s, result %v", tk.Status(), tk.Result())
		}
		mu.Lock()
		defer mu.Unlock()
		got := strings.Join(ran, ", ")
		for _, want := range []string{"attempt 1 extract", "attempt 1 transform-a", "attempt 1 transform-b", "attempt 2 load"} {
			if !strings.Contains(got, want) {
				t.Errorf("steps run %q lack %q", got, want)
			}
		}
		if len(ran) != 4 {
			t.Errorf("steps run %q: want each once", got)
		}
	})
}

// TestStepRefuses: a step result over the checkpoint bound, a checkpoint
// saved by Job.Checkpoint and a bad name are errors that save nothing.
func TestStepRefuses(t *testing.T) {
	eachBackend(t, func(t *testing.T, st realStore) {
		r := newRig(t, st, worker.Options{})
		var errs []string
		must(t, worker.AddHandler(r.rt, "bad", func(ctx context.Context, job *worker.Job, _ struct{}) (crawlOut, error) {
			big := func(context.Context) (string, error) { return strings.Repeat("x", backend.MaxCheckpointBytes), nil }
			_, err := worker.Step(ctx, job, "big", big)
			errs = append(errs, fmt.Sprint(errors.Is(err, backend.ErrInvalidCheckpoint)))
			_, err = worker.Step(ctx, job, "", func(context.Context) (int, error) { return 1, nil })
			errs = append(errs, fmt.Sprint(err != nil))
			if err := job.Checkpoint(3); err != nil {
				return crawlOut{}, err
			}
			_, err = worker.Step(ctx, job, "after", func(context.Context) (int, error) { return 1, nil })
			errs = append(errs, fmt.Sprint(errors.Is(err, worker.ErrNotSteps)))
			return crawlOut{}, nil
		}))
		r.start(t)
		if tk := r.wait(t, r.enqueue(t, "bad", `{}`, backend.EnqueueOptions{}), nil); tk.Status() != task.Completed {
			t.Fatalf("task %s", tk.Status())
		}
		if d := cmp.Diff([]string{"true", "true", "true"}, errs); d != "" {
			t.Errorf("errors (-want +got):\n%s", d)
		}
	})
}
