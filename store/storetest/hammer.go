package storetest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// hammer is the shared bookkeeping of the concurrency test.
type hammer struct {
	t *testing.T
	b backend.Store
	c *Clock

	mu         sync.Mutex
	maxClaimed map[string]int64   // highest attempt handed out per task
	holders    map[string]holding // latest claim per task
	outcomes   map[string][]string
	claims     int
	lost       int
}

// holding is what the test knows of a claim: its expiry is a lower bound
// of the store's, raised only after a heartbeat succeeded.
type holding struct {
	attempt   int64
	expiresMs int64
	ended     bool // an ending write was issued
}

// testHammer: workers claim and finish jobs while clients request
// cancellation, time jumps make leases expire and a rescuer reclaims them.
// Every task must end in exactly one terminal state, written by the one
// live lease (or by exhaustion), and no job may be handed to a second claim
// while an earlier claim is live.
func testHammer(t *testing.T, open opener) {
	b, c := open(t)
	nTasks, nWorkers := 150, 6
	if testing.Short() {
		nTasks = 60
	}
	const leaseDur = 200 * time.Millisecond
	h := &hammer{t: t, b: b, c: c, maxClaimed: map[string]int64{}, holders: map[string]holding{}, outcomes: map[string][]string{}}
	ids := make([]string, nTasks)
	for i := range ids {
		ids[i] = enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 3, TTL: -1}).ID()
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range nWorkers {
		wg.Go(func() { h.work(ctx, rand.New(rand.NewPCG(uint64(w), 1)), leaseDur) })
	}
	wg.Go(func() { // cancellation requests
		rng := rand.New(rand.NewPCG(99, 1))
		for ctx.Err() == nil {
			if err := b.RequestCancel(ctx, rc(ids[rng.IntN(len(ids))], endpointA, tenantA)); err != nil && ctx.Err() == nil {
				t.Errorf("RequestCancel: %v", err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	wg.Go(func() { // time jumps and rescue
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			c.Advance(leaseDur / 4)
			if _, err := b.Jobs().RescueExpired(ctx, backend.RescueParams{Now: c.Now(), Limit: 10, MaxInterruptedRuns: 3}); err != nil && ctx.Err() == nil {
				t.Errorf("RescueExpired: %v", err)
			}
		}
	})

	deadline := time.Now().Add(45 * time.Second)
	remaining := append([]string(nil), ids...)
	for len(remaining) > 0 && time.Now().Before(deadline) && !t.Failed() {
		time.Sleep(20 * time.Millisecond)
		var still []string
		for _, id := range remaining {
			if tk := mustFind(t, b, id); !tk.Status().Terminal() {
				still = append(still, id)
			}
		}
		remaining = still
	}
	stop()
	wg.Wait()
	if len(remaining) > 0 {
		t.Fatalf("%d of %d tasks did not reach a terminal state in time", len(remaining), nTasks)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	counts := map[string]int{}
	for _, id := range ids {
		tk := mustFind(t, b, id)
		outs := h.outcomes[id]
		switch {
		case len(outs) > 1:
			t.Errorf("task %s: %d terminal writes succeeded: %v", id, len(outs), outs)
		case len(outs) == 1 && outs[0] == "exhausted":
			if tk.Status() != task.Failed || !isExhausted(tk.Error()) {
				t.Errorf("task %s: Retry exhausted it but it is %v", id, tk.Status())
			}
		case len(outs) == 1 && string(tk.Status()) != outs[0]:
			t.Errorf("task %s: %s succeeded but the task is %v", id, outs[0], tk.Status())
		case len(outs) == 0 && (tk.Status() != task.Failed || !isExhausted(tk.Error())):
			t.Errorf("task %s: no write ended it, yet it is %v", id, tk.Status())
		}
		counts[string(tk.Status())]++
	}
	t.Logf("%d claims, %d writes refused with ErrLeaseLost, final states %v", h.claims, h.lost, counts)
}

// work claims and settles jobs until ctx is done.
func (h *hammer) work(ctx context.Context, rng *rand.Rand, leaseDur time.Duration) {
	for ctx.Err() == nil {
		// The attempts handed out before this claim began: a claim that
		// returns one of them again is a fencing bug. (Attempts handed out
		// while this claim ran may be recorded before or after its own,
		// depending on which worker takes the lock first.)
		h.mu.Lock()
		before := maps.Clone(h.maxClaimed)
		h.mu.Unlock()
		jobs, err := h.b.Jobs().Claim(ctx, backend.ClaimParams{Worker: "hammer", Limit: 1 + rng.IntN(3), Lease: leaseDur, Now: h.c.Now()})
		if err != nil {
			if ctx.Err() == nil {
				h.t.Errorf("Claim: %v", err)
			}
			return
		}
		after := h.c.Now().UnixMilli()
		h.mu.Lock()
		for _, j := range jobs {
			h.claims++
			if j.Attempt <= before[j.TaskID] {
				h.t.Errorf("task %s: attempt %d handed out after %d", j.TaskID, j.Attempt, before[j.TaskID])
			}
			h.maxClaimed[j.TaskID] = max(h.maxClaimed[j.TaskID], j.Attempt)
			prev, ok := h.holders[j.TaskID]
			if ok && prev.attempt > j.Attempt {
				continue // a later attempt was recorded first: it is the holder
			}
			if ok && !prev.ended && prev.expiresMs > after {
				h.t.Errorf("task %s: claimed (attempt %d) while attempt %d was live until %d (now %d)",
					j.TaskID, j.Attempt, prev.attempt, prev.expiresMs, after)
			}
			h.holders[j.TaskID] = holding{attempt: j.Attempt, expiresMs: j.LeaseExpires.UnixMilli()}
		}
		h.mu.Unlock()
		if len(jobs) == 0 {
			time.Sleep(time.Millisecond)
		}
		for _, j := range jobs {
			h.settle(ctx, rng, j, leaseDur)
		}
	}
}

// settle does what a worker does with a claimed job, at random.
func (h *hammer) settle(ctx context.Context, rng *rand.Rand, j backend.JobRow, leaseDur time.Duration) {
	switch rng.IntN(20) {
	case 0:
		return // the worker "crashes": the lease must expire and be rescued
	case 1, 2:
		// The worker stalls past its lease (time jumps meanwhile); its
		// writes must then be refused.
		time.Sleep(time.Duration(15+rng.IntN(20)) * time.Millisecond)
	}
	if rng.IntN(3) == 0 {
		issued := h.c.Now()
		if h.write(ctx, j, "heartbeat", false, func() error { return h.b.Jobs().Heartbeat(ctx, j.Lease, leaseDur) }) {
			h.mu.Lock()
			if hd := h.holders[j.TaskID]; hd.attempt == j.Attempt {
				hd.expiresMs = max(hd.expiresMs, issued.Add(leaseDur).UnixMilli())
				h.holders[j.TaskID] = hd
			}
			h.mu.Unlock()
		}
	}
	cancel, err := h.b.Jobs().CancelRequested(ctx, j.TaskID)
	if err != nil {
		if ctx.Err() == nil {
			h.t.Errorf("CancelRequested: %v", err)
		}
		return
	}
	switch n := rng.IntN(100); {
	case cancel:
		h.write(ctx, j, string(task.Cancelled), true, func() error { return h.b.Jobs().Cancel(ctx, j.Lease, "") })
	case n < 55:
		h.write(ctx, j, string(task.Completed), true, func() error { return h.b.Jobs().Complete(ctx, j.Lease, textResult, "") })
	case n < 70:
		h.write(ctx, j, string(task.Failed), true, func() error { return h.b.Jobs().Fail(ctx, j.Lease, toolError, "", "") })
	case n < 88:
		outcome := "retry"
		if j.Failures+1 >= j.MaxAttempts {
			outcome = "exhausted"
		}
		h.write(ctx, j, outcome, true, func() error { return h.b.Jobs().Retry(ctx, j.Lease, h.c.Now(), "", "") })
	default:
		h.write(ctx, j, "release", true, func() error { return h.b.Jobs().Release(ctx, j.Lease) })
	}
}

// write issues a fenced write and checks it: it may succeed only while no
// later claim of the job had been handed out when it was issued. Terminal
// outcomes that succeed are recorded. ending marks the claim ended first.
func (h *hammer) write(ctx context.Context, j backend.JobRow, outcome string, ending bool, fn func() error) bool {
	h.mu.Lock()
	latest := h.maxClaimed[j.TaskID]
	if hd := h.holders[j.TaskID]; ending && hd.attempt == j.Attempt {
		hd.ended = true
		h.holders[j.TaskID] = hd
	}
	h.mu.Unlock()
	err := fn()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch errClass(err) {
	case "ok":
		if latest > j.Attempt {
			h.t.Errorf("task %s: %s with attempt %d succeeded after attempt %d was claimed", j.TaskID, outcome, j.Attempt, latest)
		}
		switch outcome {
		case string(task.Completed), string(task.Failed), string(task.Cancelled), "exhausted":
			h.outcomes[j.TaskID] = append(h.outcomes[j.TaskID], outcome)
		}
		return true
	case "ErrLeaseLost":
		h.lost++
	default:
		if ctx.Err() == nil {
			h.t.Errorf("%s: %v", outcome, fmt.Sprint(err))
		}
	}
	return false
}
