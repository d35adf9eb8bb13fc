package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// stalledClaimStore is a harness's storeWrap whose first Claim takes its
// snapshot of the queue and then does not return until gate is closed, like
// a claim that is slow to come back from a busy database.
type stalledClaimStore struct {
	*storeWrap
	gate  chan struct{}
	calls atomic.Int32
}

func (s *stalledClaimStore) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	jobs, err := s.storeWrap.Claim(ctx, p)
	if s.calls.Add(1) == 1 {
		select {
		case <-s.gate:
		case <-ctx.Done():
		}
	}
	return jobs, err
}

// TestHintClaimsDuringSlowClaim: a task created while the runtime's claim
// is under way (and after that claim read the queue) is claimed at once on
// its hint by a second claim, without waiting for the first claim to
// return or for PollInterval.
func TestHintClaimsDuringSlowClaim(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		concurrency, claimBatch  int
		wantCompletedBeforeFirst bool
	}{
		// Every slot is reserved by the claim under way: nothing to claim
		// with until it returns.
		{name: "no free slot", concurrency: 2, claimBatch: 2, wantCompletedBeforeFirst: false},
		{name: "free slots", concurrency: 4, claimBatch: 2, wantCompletedBeforeFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{Concurrency: tc.concurrency, ClaimBatch: tc.claimBatch, PollInterval: time.Hour})
				stalled := &stalledClaimStore{storeWrap: h.store, gate: make(chan struct{})}
				h.rt.opts.Store = stalled
				if err := h.rt.AddRawHandler("quick", func(context.Context, *Job) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":1}`)}, nil
				}); err != nil {
					t.Fatal(err)
				}
				h.start()
				synctest.Wait() // the first claim found nothing and stalls
				t0 := time.Now()
				id := h.enqueue(t, testOrigin(t, "quick", `{}`, sumSchema), 3)
				synctest.Wait()
				got := h.job(t, id).status == task.Completed
				if got != tc.wantCompletedBeforeFirst || !time.Now().Equal(t0) {
					t.Errorf("completed %v after %s while the first claim stalled, want %v at once", got, time.Since(t0), tc.wantCompletedBeforeFirst)
				}
				close(stalled.gate)
				h.waitStatus(t, id, task.Completed)
				h.stop(t)
			})
		})
	}
}

// TestClaimsAskForUnreservedSlots: two claims under way at once never ask
// for more slots together than Concurrency.
func TestClaimsAskForUnreservedSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Concurrency: 5, ClaimBatch: 3, PollInterval: time.Hour})
		stalled := &stalledClaimStore{storeWrap: h.store, gate: make(chan struct{})}
		h.rt.opts.Store = stalled
		if err := h.rt.AddRawHandler("quick", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":1}`)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		h.start()
		synctest.Wait()
		h.rt.hint("") // a hint while the first claim stalls
		synctest.Wait()
		close(stalled.gate)
		synctest.Wait()
		h.stop(t)
		h.store.mu.Lock()
		var limits []int
		for _, c := range h.store.claims[:2] {
			limits = append(limits, c.Limit)
		}
		h.store.mu.Unlock()
		if diff := cmp.Diff([]int{3, 2}, limits); diff != "" {
			t.Errorf("limits of the first two claims (-want +got):\n%s", diff)
		}
	})
}
