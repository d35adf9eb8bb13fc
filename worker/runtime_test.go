package worker

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func TestOptions(t *testing.T) {
	store := newJobs(t)
	o, err := Options{Store: store}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Concurrency != 10 || o.ClaimBatch != 10 || o.Lease != 30*time.Second || o.HeartbeatEvery != 10*time.Second ||
		o.PollInterval != 500*time.Millisecond || o.RescueEvery != 15*time.Second || o.RescueBatch != 100 ||
		o.CleanupEvery != time.Minute || o.CleanupBatch != 500 || o.ShutdownGrace != 10*time.Second ||
		o.MaxInterruptedRuns != 20 || o.RetryWindow != 30*time.Minute || o.Backoff == nil || o.Logger == nil || o.Metrics == nil || o.Now == nil {
		t.Errorf("defaults = %+v", o)
	}
	if !strings.HasSuffix(o.Name, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("Name = %q, want hostname-pid", o.Name)
	}

	for name, bad := range map[string]Options{
		"no store":                {},
		"negative Concurrency":    {Store: store, Concurrency: -1},
		"negative ClaimBatch":     {Store: store, ClaimBatch: -1},
		"ClaimBatch > Conc.":      {Store: store, Concurrency: 2, ClaimBatch: 3},
		"negative Lease":          {Store: store, Lease: -time.Second},
		"negative Heartbeat":      {Store: store, HeartbeatEvery: -time.Second},
		"Heartbeat == Lease":      {Store: store, Lease: time.Second, HeartbeatEvery: time.Second},
		"Heartbeat > Lease":       {Store: store, HeartbeatEvery: time.Minute},
		"Lease too short":         {Store: store, Lease: 2}, // Lease/3 rounds to 0
		"negative PollInterval":   {Store: store, PollInterval: -1},
		"negative RescueEvery":    {Store: store, RescueEvery: -1},
		"negative RescueBatch":    {Store: store, RescueBatch: -1},
		"negative CleanupEvery":   {Store: store, CleanupEvery: -1},
		"negative CleanupBatch":   {Store: store, CleanupBatch: -1},
		"negative ShutdownGrace":  {Store: store, ShutdownGrace: -1},
		"negative MaxInterrupted": {Store: store, MaxInterruptedRuns: -1},
		"negative RetryWindow":    {Store: store, RetryWindow: -1},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// TestOptionsName: a name the stores cannot hold (PostgreSQL text refuses
// a NUL byte at every claim) fails New, naming the field.
func TestOptionsName(t *testing.T) {
	store := newJobs(t)
	got := map[string]bool{}
	for name, n := range map[string]string{
		"plain":         "node-1.example",
		"unicode":       "nœud-é",
		"longest":       strings.Repeat("w", MaxWorkerNameBytes),
		"NUL":           "a\x00b",
		"newline":       "a\nb",
		"invalid UTF-8": "a\xffb",
		"too long":      strings.Repeat("w", MaxWorkerNameBytes+1),
	} {
		_, err := New(Options{Store: store, Name: n})
		if err != nil && !strings.Contains(err.Error(), "Options.Name") {
			t.Errorf("%s: error %v does not name Options.Name", name, err)
		}
		got[name] = err == nil
	}
	want := map[string]bool{"plain": true, "unicode": true, "longest": true,
		"NUL": false, "newline": false, "invalid UTF-8": false, "too long": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accepted (-want +got):\n%s", diff)
	}
}

func TestDefaultBackoff(t *testing.T) {
	for n := -1; n <= 40; n++ {
		ceiling := 5 * time.Minute
		if n < 10 {
			ceiling = min(ceiling, time.Second<<max(n-1, 0))
		}
		for range 50 {
			if d := DefaultBackoff(n); d < ceiling/2 || d > ceiling {
				t.Fatalf("DefaultBackoff(%d) = %v, want within [%v, %v]", n, d, ceiling/2, ceiling)
			}
		}
	}
}

func TestRegistration(t *testing.T) {
	rt, err := New(Options{Store: newJobs(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(context.Background()); err == nil {
		t.Error("Run without handlers succeeded")
	}
	raw := func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) { return nil, nil }
	if err := rt.AddRawHandler("", raw); err == nil {
		t.Error("empty kind accepted")
	}
	for _, kind := range []string{"a\xff", "a\x00"} {
		if err := rt.AddRawHandler(kind, raw); err == nil {
			t.Errorf("kind %q accepted: it cannot be a metrics label", kind)
		}
	}
	if err := rt.AddRawHandler("k", nil); err == nil {
		t.Error("nil raw handler accepted")
	}
	if err := AddHandler[struct{}, struct{}](rt, "k", nil); err == nil {
		t.Error("nil typed handler accepted")
	}
	if err := rt.AddRawHandler("k", raw); err != nil {
		t.Fatal(err)
	}
	if err := AddHandler(rt, "k", func(context.Context, *Job, struct{}) (int, error) { return 0, nil }); err == nil {
		t.Error("duplicate kind accepted")
	}

	// Channels made outside a bubble do not block durably in it: build the
	// runtime that runs inside the bubble.
	synctest.Test(t, func(t *testing.T) {
		rt, err := New(Options{Store: newJobs(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.AddRawHandler("k", raw); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- rt.Run(ctx) }()
		synctest.Wait()
		if err := rt.AddRawHandler("late", raw, WithQueue("elsewhere")); err == nil {
			t.Error("registration after Run in a queue the runtime does not serve accepted")
		}
		if err := rt.AddRawHandler("late", raw); err != nil {
			t.Errorf("registration after Run in a served queue: %v", err)
		}
		if err := rt.Run(ctx); err == nil {
			t.Error("second Run accepted")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

func TestMaintenancePeriods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{RescueEvery: 10 * time.Second, CleanupEvery: 30 * time.Second})
		if err := h.rt.AddRawHandler("x", func(context.Context, *Job) (*mcp.CallToolResult, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		h.start()
		time.Sleep(65 * time.Second)
		h.stop(t)
		if rescues, cleanups, _ := h.store.calls(); rescues != 7 || cleanups != 3 {
			t.Errorf("%d rescue and %d cleanup passes in 65s, want 7 and 3", rescues, cleanups)
		}
	})
}

func TestDrainWaitsForRunningHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		started := make(chan struct{})
		err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			close(started)
			time.Sleep(3 * time.Second)
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3)
		h.start()
		<-started
		t0 := time.Now()
		h.stop(t)
		if d := time.Since(t0); d != 3*time.Second {
			t.Errorf("Run returned %v after cancel, want when the handler finished (3s)", d)
		}
		if j := h.job(t, id); j.status != task.Completed {
			t.Errorf("status = %s", j.status)
		}
	})
}

func TestDrainReleasesHandlersPastGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{ShutdownGrace: 5 * time.Second, Concurrency: 2})
		b := newBlockingHandler(false)
		if err := AddHandler(h.rt, "slow", b.handle); err != nil {
			t.Fatal(err)
		}
		ids := []string{
			h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3),
			h.enqueue(t, testOrigin(t, "slow", `{}`, sumSchema), 3),
		}
		h.start()
		<-b.started
		<-b.started
		t0 := time.Now()
		h.stop(t)
		if d := time.Since(t0); d != 5*time.Second {
			t.Errorf("Run returned %v after cancel, want the 5s grace", d)
		}
		if !errors.Is(b.lastCause(), ErrShuttingDown) {
			t.Errorf("cause = %v", b.lastCause())
		}
		for _, id := range ids {
			if j := h.job(t, id); j.state != memory.JobAvailable || j.status != task.Working || j.failures != 0 {
				t.Errorf("state %s status %s failures %d, want released", j.state, j.status, j.failures)
			}
		}
		if diff := cmp.Diff([]string{"Release", "Release"}, h.store.writeLog()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		if n := h.metrics.transition("slow", TransitionReleased); n != 2 {
			t.Errorf("released = %d", n)
		}
		if len(h.metrics.failures) != 0 {
			t.Errorf("failures counted on shutdown: %v", h.metrics.failures)
		}
	})
}

func TestConcurrencyBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Concurrency: 3})
		var running, peak atomic.Int32
		err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Second)
			running.Add(-1)
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range 20 {
			ids = append(ids, h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3))
		}
		h.start()
		for _, id := range ids {
			h.waitStatus(t, id, task.Completed)
		}
		h.stop(t)
		if p := peak.Load(); p != 3 {
			t.Errorf("peak concurrency = %d, want 3", p)
		}
		for _, c := range h.store.claimLog() {
			if c.Limit < 1 || c.Limit > 3 || c.Worker != "test-worker" || c.Lease != 30*time.Second || !slices.Equal(c.Kinds, []string{"sum"}) {
				t.Fatalf("claim %+v", c)
			}
		}
	})
}

func TestIdleClaimLoopPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		if err := h.rt.AddRawHandler("x", func(context.Context, *Job) (*mcp.CallToolResult, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		h.start()
		time.Sleep(10*time.Second - time.Millisecond)
		h.stop(t)
		if n := len(h.store.claimLog()); n != 20 {
			t.Errorf("%d claims in 10s of idling, want one per 500ms poll (20)", n)
		}
	})
}

func TestWakeups(t *testing.T) {
	t.Run("event hint", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{PollInterval: time.Hour})
			if err := AddHandler(h.rt, "sum", func(context.Context, *Job, struct{}) (sumOut, error) { return sumOut{}, nil }); err != nil {
				t.Fatal(err)
			}
			h.start()
			time.Sleep(time.Minute)
			t0 := time.Now()
			id := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3) // publishes a hint
			h.waitStatus(t, id, task.Completed)
			if d := time.Since(t0); d > 10*time.Millisecond {
				t.Errorf("hinted job completed after %v", d)
			}
			h.stop(t)
		})
	})
	t.Run("freed slot", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{PollInterval: time.Hour, Concurrency: 1, Events: noHints{}})
			if err := AddHandler(h.rt, "sum", func(context.Context, *Job, struct{}) (sumOut, error) {
				time.Sleep(time.Second)
				return sumOut{}, nil
			}); err != nil {
				t.Fatal(err)
			}
			a := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3)
			b := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3)
			t0 := time.Now()
			h.start()
			h.waitStatus(t, a, task.Completed)
			h.waitStatus(t, b, task.Completed)
			if d := time.Since(t0); d > 2*time.Second+10*time.Millisecond {
				t.Errorf("two 1s jobs took %v on one slot", d)
			}
			h.stop(t)
		})
	})
}

func TestMetricLabelsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: func(int) time.Duration { return time.Second }})
		h.store.anyKindClaims = 1 // a buggy store hands out a job of a kind not asked for
		if err := h.rt.AddRawHandler("known", func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			if job.Failures() == 0 {
				return nil, errors.New("once")
			}
			return textResult("ok", false), nil
		}); err != nil {
			t.Fatal(err)
		}
		stray := h.enqueue(t, testOrigin(t, "not-registered", `{}`, ""), 3)
		id := h.enqueue(t, testOrigin(t, "known", `{}`, ""), 3)
		h.start()
		h.waitStatus(t, id, task.Completed)
		waitFor(t, "stray released", func() bool { return h.metrics.transition(unknownKind, TransitionReleased) == 1 })
		h.stop(t)
		if j := h.job(t, stray); j.state != memory.JobAvailable || j.failures != 0 {
			t.Errorf("stray job: state %s failures %d", j.state, j.failures)
		}

		// The served queues are the queue labels: here the default one.
		allowed := map[string]bool{"known": true, unknownKind: true, "default": true}
		for _, tr := range []Transition{TransitionClaimed, TransitionCompleted, TransitionFailed, TransitionCancelled,
			TransitionRetried, TransitionInputRequested, TransitionLeaseLost, TransitionReleased, TransitionRescued, TransitionExpiredDeleted} {
			allowed[string(tr)] = true
		}
		for _, c := range []FailureCategory{FailureHandlerError, FailurePermanent, FailureTimeout, FailureInvalidResult, FailurePanic} {
			allowed[string(c)] = true
		}
		h.metrics.mu.Lock()
		defer h.metrics.mu.Unlock()
		for _, l := range h.metrics.labels {
			if !allowed[l] {
				t.Errorf("unbounded metric label %q", l)
			}
		}
		if !h.metrics.kinds[unknownKind] {
			t.Error("the unregistered kind was not reported as unknown")
		}
	})
}

// TestRunLeavesNoGoroutines runs on the real clock, outside any bubble, and
// checks with goleak that every goroutine has ended when Run returns.
func TestRunLeavesNoGoroutines(t *testing.T) {
	h := newHarness(t, Options{
		Concurrency: 4, Lease: 1500 * time.Millisecond,
		PollInterval: 5 * time.Millisecond, ShutdownGrace: 50 * time.Millisecond,
	})
	heldStarted := make(chan struct{})
	var once sync.Once
	err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
		if in.A < 0 {
			once.Do(func() { close(heldStarted) })
			<-ctx.Done() // held until the grace ends
			return sumOut{}, ctx.Err()
		}
		time.Sleep(600 * time.Millisecond) // spans a heartbeat
		return sumOut{Sum: in.A}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	unsubscribe := h.mem.EventPublisher().Subscribe(func(string) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	var ids []string
	for range 5 {
		ids = append(ids, h.enqueue(t, testOrigin(t, "sum", `{"a":1}`, sumSchema), 3))
	}
	held := h.enqueue(t, testOrigin(t, "sum", `{"a":-1}`, sumSchema), 3)
	h.start()
	<-heldStarted
	deadline := time.After(30 * time.Second)
	for {
		n := 0
		for _, id := range ids {
			if h.job(t, id).status == task.Completed {
				n++
			}
		}
		if n == len(ids) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d of %d jobs completed", n, len(ids))
		}
	}
	h.stop(t)
	for _, id := range ids {
		if s := h.job(t, id).status; s != task.Completed {
			t.Errorf("status %s", s)
		}
	}
	if j := h.job(t, held); j.state != memory.JobAvailable {
		t.Errorf("held job state %s, want released", j.state)
	}
	goleak.VerifyNone(t)
}
