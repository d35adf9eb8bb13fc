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
	"github.com/taskwire/taskwire/task"
)

// batchStore is a harness's storeWrap that completes in batches, through
// the in-memory backend's CompleteBatch, recording the checkpoint each
// accepted completion carried.
type batchStore struct {
	*storeWrap
	mu      sync.Mutex
	carried []string // per completion written: its checkpoint, "" for none
}

func (s *batchStore) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	lost, err := s.JobStore.(backend.BatchCompleter).CompleteBatch(ctx, items)
	if err != nil {
		return lost, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, it := range items {
		if !lost[i] {
			s.carried = append(s.carried, string(it.Checkpoint))
		}
	}
	return lost, nil
}

func (s *batchStore) carriedLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.carried...)
}

// checkpointBytes returns the size of the job's checkpoint, as the console
// shows it.
func (h *harness) checkpointBytes(t *testing.T, id string) int {
	t.Helper()
	ot, err := h.mem.Operator().Task(context.Background(), id)
	if err != nil || ot.Job == nil {
		t.Fatalf("operator task: %+v, %v", ot.Job, err)
	}
	return ot.Job.CheckpointBytes
}

// TestCheckpointLaterWithCompletion: values saved with CheckpointLater
// cost no write of their own when the run completes in a batch: the last
// one rides on the completion, and LastCheckpoint returns it at once.
func TestCheckpointLaterWithCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		bs := &batchStore{storeWrap: h.store}
		h.rt.opts.Store = bs
		var last int
		var lastErr error
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			for page := 1; page <= 3; page++ {
				if err := job.CheckpointLater(page * 100); err != nil {
					return sumOut{}, err
				}
			}
			_, lastErr = job.LastCheckpoint(&last)
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if last != 300 || lastErr != nil {
			t.Errorf("LastCheckpoint in the run = %d, %v; want 300", last, lastErr)
		}
		if d := cmp.Diff([]string{"300"}, bs.carriedLog()); d != "" {
			t.Errorf("checkpoints carried by completions (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string(nil), h.store.writeLog()); d != "" {
			t.Errorf("writes besides the batched completion (-want +got):\n%s", d)
		}
		if n := h.checkpointBytes(t, id); n != 3 {
			t.Errorf("job checkpoint of %d bytes, want 3", n)
		}
	})
}

// TestCheckpointLaterAtHeartbeat: a value held by CheckpointLater is
// written at the run's next heartbeat; one still held when the run ends
// without a batched completion is written before the final write.
func TestCheckpointLaterAtHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Lease: 3 * time.Second})
		var afterBeat []string
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			if err := job.CheckpointLater("first"); err != nil {
				return sumOut{}, err
			}
			time.Sleep(1500 * time.Millisecond) // past one heartbeat (Lease / 3)
			afterBeat = h.store.writeLog()
			if err := job.CheckpointLater("second"); err != nil {
				return sumOut{}, err
			}
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if d := cmp.Diff([]string{"SaveCheckpoints"}, afterBeat); d != "" {
			t.Errorf("writes after a heartbeat (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"SaveCheckpoints", "SaveCheckpoints", "Complete"}, h.store.writeLog()); d != "" {
			t.Errorf("writes (-want +got):\n%s", d)
		}
		if n := h.checkpointBytes(t, id); n != len(`"second"`) {
			t.Errorf("job checkpoint of %d bytes, want the second's %d", n, len(`"second"`))
		}
	})
}

// TestCheckpointLaterLostLease: a value held by CheckpointLater when the
// lease is lost is never written: the completion that carries it is
// refused, and the job keeps the last checkpoint written under the lease.
func TestCheckpointLaterLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		bs := &batchStore{storeWrap: h.store}
		h.rt.opts.Store = bs
		saved, lost := make(chan struct{}), make(chan struct{})
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			if err := job.Checkpoint("kept"); err != nil {
				return sumOut{}, err
			}
			close(saved)
			<-lost
			if err := job.CheckpointLater("dropped!"); err != nil {
				return sumOut{}, err
			}
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		<-saved
		h.rescueElsewhere(t)
		h.claimElsewhere(t, id, time.Hour)
		close(lost)
		synctest.Wait()
		h.stop(t)
		if got := bs.carriedLog(); len(got) != 0 {
			t.Errorf("completions written: %q, want none", got)
		}
		if n := h.checkpointBytes(t, id); n != len(`"kept"`) {
			t.Errorf("job checkpoint of %d bytes, want the kept one's %d", n, len(`"kept"`))
		}
		if got := h.job(t, id).status; got != task.Working {
			t.Errorf("task %s, want still working under the other claim", got)
		}
	})
}

// TestCheckpointSupersedesLater: a synchronous Checkpoint replaces a value
// CheckpointLater holds, which is then never written after it.
func TestCheckpointSupersedesLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		bs := &batchStore{storeWrap: h.store}
		h.rt.opts.Store = bs
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			if err := job.CheckpointLater("older"); err != nil {
				return sumOut{}, err
			}
			if err := job.Checkpoint("newer!"); err != nil {
				return sumOut{}, err
			}
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if d := cmp.Diff([]string{""}, bs.carriedLog()); d != "" {
			t.Errorf("checkpoints carried by completions (-want +got):\n%s", d)
		}
		if n := h.checkpointBytes(t, id); n != len(`"newer!"`) {
			t.Errorf("job checkpoint of %d bytes, want %d", n, len(`"newer!"`))
		}
	})
}

// TestCheckpointLaterRefusals: CheckpointLater refuses what Checkpoint
// refuses, holding nothing.
func TestCheckpointLaterRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		var bigErr, badErr error
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			bigErr = job.CheckpointLater(make([]byte, backend.MaxCheckpointBytes))
			badErr = job.CheckpointLater(func() {})
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if !errors.Is(bigErr, backend.ErrInvalidCheckpoint) || badErr == nil {
			t.Errorf("CheckpointLater of a large value: %v; of a func: %v", bigErr, badErr)
		}
		if d := cmp.Diff([]string{"Complete"}, h.store.writeLog()); d != "" {
			t.Errorf("writes (-want +got):\n%s", d)
		}
	})
}
