package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

type crawlIn struct {
	Pages int `json:"pages"`
}

type crawlOut struct {
	Pages int `json:"pages"`
}

// TestCheckpointResumes: on every backend, a run that fails after
// checkpointing page 3 of 6 is retried from page 4 (the claim carries the
// checkpoint), its attempt to report page 0 again is dropped (the count
// never goes backwards), and the history shows one checkpoint step per
// page with its size.
func TestCheckpointResumes(t *testing.T) {
	eachBackend(t, func(t *testing.T, st realStore) {
		r := newRig(t, st, worker.Options{})
		var mu sync.Mutex
		var ran []string
		must(t, worker.AddHandler(r.rt, "crawl", func(ctx context.Context, job *worker.Job, in crawlIn) (crawlOut, error) {
			var done int
			if _, err := job.LastCheckpoint(&done); err != nil {
				return crawlOut{}, worker.Permanent(err)
			}
			if done > 0 {
				// A re-run: a report below the count so far is dropped.
				must(t, job.ReportProgress("starting over", 0, float64(in.Pages)))
				time.Sleep(30 * time.Millisecond)
			}
			for page := done + 1; page <= in.Pages; page++ {
				mu.Lock()
				ran = append(ran, fmt.Sprintf("attempt %d page %d", job.Attempt(), page))
				mu.Unlock()
				if err := job.Checkpoint(page); err != nil {
					return crawlOut{}, err
				}
				var last int
				if found, err := job.LastCheckpoint(&last); !found || err != nil || last != page {
					t.Errorf("LastCheckpoint after Checkpoint(%d) = %d, %t, %v", page, last, found, err)
				}
				must(t, job.ReportProgress(fmt.Sprintf("page %d of %d", page, in.Pages), float64(page), float64(in.Pages)))
				time.Sleep(15 * time.Millisecond) // a progress interval
				if page == 3 && job.Attempt() == 1 {
					return crawlOut{}, errors.New("the site went away")
				}
			}
			return crawlOut{Pages: in.Pages}, nil
		}))
		r.start(t)
		id := r.enqueue(t, "crawl", `{"pages":6}`, backend.EnqueueOptions{MaxAttempts: 3})
		var high float64
		tk := r.wait(t, id, func(tk task.Task) {
			if p, ok := tk.Progress(); ok {
				if p.Current < high {
					t.Errorf("progress went back from %v to %v", high, p.Current)
				}
				high = max(high, p.Current)
			}
		})
		if tk.Status() != task.Completed || string(tk.Result().StructuredContent) != `{"pages":6}` {
			t.Fatalf("task %s, result %v", tk.Status(), tk.Result())
		}
		want := []string{"attempt 1 page 1", "attempt 1 page 2", "attempt 1 page 3", "attempt 2 page 4",
			"attempt 2 page 5", "attempt 2 page 6"}
		mu.Lock()
		if d := cmp.Diff(want, ran); d != "" {
			t.Errorf("pages run (-want +got):\n%s", d)
		}
		mu.Unlock()
		ot := r.history(t, id)
		var checkpoints []string
		for _, e := range ot.Events {
			switch e.Kind {
			case backend.EventCheckpoint:
				checkpoints = append(checkpoints, fmt.Sprintf("%d: %s", e.Attempt, e.Message))
			case backend.EventProgress:
				if strings.Contains(e.Message, "starting over") {
					t.Errorf("a report below the count was written: %+v", e)
				}
			}
		}
		if d := cmp.Diff([]string{"1: 1 bytes", "1: 1 bytes", "1: 1 bytes", "2: 1 bytes", "2: 1 bytes", "2: 1 bytes"},
			checkpoints); d != "" {
			t.Errorf("checkpoint steps (-want +got):\n%s", d)
		}
		if p, ok := tk.Progress(); !ok || p != (task.Progress{Current: 6, Total: 6}) {
			t.Errorf("final progress %v %t, want 6 of 6", p, ok)
		}
	})
}

// TestCheckpointTooLarge: on every backend, a checkpoint over
// backend.MaxCheckpointBytes is refused before anything is written, with
// an error that says so; the last checkpoint stays.
func TestCheckpointTooLarge(t *testing.T) {
	eachBackend(t, func(t *testing.T, st realStore) {
		r := newRig(t, st, worker.Options{})
		var bigErr error
		var last string
		must(t, worker.AddHandler(r.rt, "big", func(ctx context.Context, job *worker.Job, _ struct{}) (crawlOut, error) {
			if err := job.Checkpoint("small"); err != nil {
				return crawlOut{}, err
			}
			bigErr = job.Checkpoint(strings.Repeat("x", backend.MaxCheckpointBytes))
			_, err := job.LastCheckpoint(&last)
			return crawlOut{}, err
		}))
		r.start(t)
		id := r.enqueue(t, "big", `{}`, backend.EnqueueOptions{})
		if tk := r.wait(t, id, nil); tk.Status() != task.Completed {
			t.Fatalf("task %s", tk.Status())
		}
		if !errors.Is(bigErr, backend.ErrInvalidCheckpoint) || !strings.Contains(bigErr.Error(), "65538 bytes exceed") {
			t.Errorf("big checkpoint: %v", bigErr)
		}
		if last != "small" {
			t.Errorf("last checkpoint %q, want small", last)
		}
		if ot := r.history(t, id); ot.Job == nil || ot.Job.CheckpointBytes != len(`"small"`) {
			t.Errorf("job %+v: want the small checkpoint's size", ot.Job)
		}
	})
}

// TestCheckpointLaterResumes: on every backend, a run that fails after
// holding page 3 of 6 with CheckpointLater writes it before its retry, the
// retry resumes from page 4, and its last value is saved with the batched
// completion.
func TestCheckpointLaterResumes(t *testing.T) {
	eachBackend(t, func(t *testing.T, st realStore) {
		r := newRig(t, st, worker.Options{})
		var mu sync.Mutex
		var ran []string
		must(t, worker.AddHandler(r.rt, "crawl", func(ctx context.Context, job *worker.Job, in crawlIn) (crawlOut, error) {
			var done int
			if _, err := job.LastCheckpoint(&done); err != nil {
				return crawlOut{}, worker.Permanent(err)
			}
			for page := done + 1; page <= in.Pages; page++ {
				mu.Lock()
				ran = append(ran, fmt.Sprintf("attempt %d page %d", job.Attempt(), page))
				mu.Unlock()
				if err := job.CheckpointLater(page); err != nil {
					return crawlOut{}, err
				}
				if page == 3 && job.Attempt() == 1 {
					return crawlOut{}, errors.New("the site went away")
				}
			}
			return crawlOut{Pages: in.Pages}, nil
		}))
		r.start(t)
		id := r.enqueue(t, "crawl", `{"pages":6}`, backend.EnqueueOptions{MaxAttempts: 3})
		if tk := r.wait(t, id, nil); tk.Status() != task.Completed {
			t.Fatalf("task %s", tk.Status())
		}
		want := []string{"attempt 1 page 1", "attempt 1 page 2", "attempt 1 page 3", "attempt 2 page 4",
			"attempt 2 page 5", "attempt 2 page 6"}
		mu.Lock()
		if d := cmp.Diff(want, ran); d != "" {
			t.Errorf("pages run (-want +got):\n%s", d)
		}
		mu.Unlock()
		if ot := r.history(t, id); ot.Job == nil || ot.Job.CheckpointBytes != 1 || ot.Job.CheckpointAt.IsZero() {
			t.Errorf("job %+v: want the last page's checkpoint", ot.Job)
		}
	})
}
