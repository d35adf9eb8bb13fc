package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// gatedBatchStore is a harness's storeWrap that completes in batches,
// through the in-memory backend's CompleteBatch, once gate is closed.
type gatedBatchStore struct {
	*storeWrap
	gate    chan struct{}
	batches atomic.Int32
}

func (s *gatedBatchStore) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	s.batches.Add(1)
	<-s.gate
	return s.JobStore.(backend.BatchCompleter).CompleteBatch(ctx, items)
}

// TestQueuedCompletionFreesSlot: with one slot, a job whose handler has
// returned and whose completion waits for its batch to commit does not keep
// the next job from starting.
func TestQueuedCompletionFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Concurrency: 1})
		gated := &gatedBatchStore{storeWrap: h.store, gate: make(chan struct{})}
		h.rt.opts.Store = gated
		var runs atomic.Int32
		if err := h.rt.AddRawHandler("quick", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":1}`)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		first := h.enqueue(t, testOrigin(t, "quick", `{}`, sumSchema), 3)
		second := h.enqueue(t, testOrigin(t, "quick", `{}`, sumSchema), 3)
		h.start()
		// Without letting time pass (a write would time out and free the
		// slot after a lease), both handlers have run.
		synctest.Wait()
		if n := runs.Load(); n != 2 {
			t.Fatalf("%d handlers ran while the first completion waited for its batch, want 2", n)
		}
		if got := h.job(t, first).status; got != task.Working {
			t.Fatalf("first task %q before its batch committed", got)
		}
		close(gated.gate)
		h.waitStatus(t, first, task.Completed)
		h.waitStatus(t, second, task.Completed)
		h.stop(t)
		if n := gated.batches.Load(); n < 1 {
			t.Errorf("%d batches", n)
		}
	})
}

// TestCompletionBatchesInFlight: completions that arrive one after the
// other while the earlier batches still commit each go into a batch of
// their own at once, up to four batches committing together; the fifth
// waits for a batch to return.
func TestCompletionBatchesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const jobs = 5
		h := newHarness(t, Options{Concurrency: jobs})
		gated := &gatedBatchStore{storeWrap: h.store, gate: make(chan struct{})}
		h.rt.opts.Store = gated
		release := make(chan struct{})
		if err := h.rt.AddRawHandler("quick", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			<-release
			return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":1}`)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range jobs {
			ids = append(ids, h.enqueue(t, testOrigin(t, "quick", `{}`, sumSchema), 3))
		}
		h.start()
		synctest.Wait()
		var inFlight []int32
		for range jobs {
			release <- struct{}{} // one handler returns
			synctest.Wait()
			inFlight = append(inFlight, gated.batches.Load())
		}
		if diff := cmp.Diff([]int32{1, 2, 3, 4, 4}, inFlight); diff != "" {
			t.Errorf("CompleteBatch calls under way after each handler returned (-want +got):\n%s", diff)
		}
		close(gated.gate)
		for _, id := range ids {
			h.waitStatus(t, id, task.Completed)
		}
		h.stop(t)
	})
}
