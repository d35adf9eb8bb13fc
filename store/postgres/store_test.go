package postgres

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// These tests pin the backend's own behaviour; the shared behavioural suite
// (store/storetest) runs in storetest_test.go.

func claimOne(t *testing.T, s *Store, now time.Time) backend.JobRow {
	t.Helper()
	jobs, err := s.Jobs().Claim(ctxT(t), backend.ClaimParams{Worker: "w", Limit: 1, Lease: 30 * time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

func mustFind(t *testing.T, s *Store, id, tenant string) task.Task {
	t.Helper()
	got, found, err := s.FindTask(ctxT(t), rc(id, tenant))
	if err != nil || !found {
		t.Fatalf("FindTask(%s) = found %v, err %v", id, found, err)
	}
	return got
}

func TestEnqueueAndAuthorization(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)
	cc := creation(t, "acme", "echo", `{"n": 1.0, "s":"<b>"}`)
	snap, err := s.Enqueue(ctx, cc, backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Status() != task.Working || !snap.CreatedAt().Equal(clk.Now()) || snap.TTL() != DefaultTTL {
		t.Fatalf("snapshot = %v created %v TTL %v", snap.Status(), snap.CreatedAt(), snap.TTL())
	}
	got := mustFind(t, s, snap.ID(), "acme")
	if !bytes.Equal(got.Origin().Persisted(), cc.Origin.Persisted()) {
		t.Fatal("origin bytes changed in storage")
	}
	for name, r := range map[string]task.RequestContext{
		"other tenant":   rc(snap.ID(), "evil"),
		"other endpoint": {TaskID: snap.ID(), Endpoint: "admin", Tenant: "acme"},
		"unknown":        rc("no-such-task", "acme"),
	} {
		if _, found, err := s.FindTask(ctx, r); found || err != nil {
			t.Errorf("%s: FindTask found %v err %v", name, found, err)
		}
		if err := s.UpdateTask(ctx, task.UpdateContext{RequestContext: r}); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("%s: UpdateTask = %v", name, err)
		}
		if err := s.RequestCancel(ctx, r); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("%s: RequestCancel = %v", name, err)
		}
	}
	clk.Advance(DefaultTTL)
	if _, found, _ := s.FindTask(ctx, rc(snap.ID(), "acme")); found {
		t.Error("expired task still found")
	}
	if n, err := s.Jobs().DeleteExpired(ctx, time.Time{}, 10); n != 1 || err != nil {
		t.Errorf("DeleteExpired = %d, %v", n, err)
	}
}

func TestFencing(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)
	snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	first := claimOne(t, s, clk.Now())
	if first.Attempt != 1 || first.Kind != "echo" || !first.LeaseExpires.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("job = %+v", first)
	}
	stale := first.Lease
	stale.Attempt = 0
	if err := s.Jobs().Complete(ctx, stale, &mcp.CallToolResult{}, ""); !errors.Is(err, backend.ErrLeaseLost) {
		t.Fatalf("Complete with a wrong attempt = %v", err)
	}
	if err := s.Jobs().Heartbeat(ctx, first.Lease, time.Minute); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	for name, write := range map[string]func() error{
		"Complete":  func() error { return s.Jobs().Complete(ctx, first.Lease, &mcp.CallToolResult{}, "") },
		"Heartbeat": func() error { return s.Jobs().Heartbeat(ctx, first.Lease, time.Minute) },
		"Retry":     func() error { return s.Jobs().Retry(ctx, first.Lease, time.Time{}, "", "") },
		"Release":   func() error { return s.Jobs().Release(ctx, first.Lease) },
		"RequestInput": func() error {
			return s.Jobs().RequestInput(ctx, first.Lease, mcp.InputRequests{"k": formRequest("?")}, "")
		},
	} {
		if err := write(); !errors.Is(err, backend.ErrLeaseLost) {
			t.Errorf("%s after lease expiry = %v", name, err)
		}
	}
	if n, err := s.Jobs().RescueExpired(ctx, backend.RescueParams{Now: clk.Now(), Limit: 10, MaxInterruptedRuns: 20}); n != 1 || err != nil {
		t.Fatalf("RescueExpired = %d, %v", n, err)
	}
	second := claimOne(t, s, clk.Now())
	if second.Attempt != 2 || second.Failures != 0 || second.InterruptedRuns != 1 {
		t.Fatalf("reclaimed job = %+v", second)
	}
	if err := s.Jobs().Fail(ctx, first.Lease, mcp.NewError(1, "stale"), "", ""); !errors.Is(err, backend.ErrLeaseLost) {
		t.Fatalf("stale Fail after reclaim = %v", err)
	}
	res := &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"v":3.50}`)}
	if err := s.Jobs().Complete(ctx, second.Lease, res, "done"); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs().Cancel(ctx, second.Lease, ""); !errors.Is(err, backend.ErrLeaseLost) {
		t.Fatalf("Cancel after Complete = %v", err)
	}
	got := mustFind(t, s, snap.ID(), "acme")
	if got.Status() != task.Completed || got.StatusMessage() != "done" || string(got.Result().StructuredContent) != `{"v":3.50}` {
		t.Fatalf("task = %v %q %s", got.Status(), got.StatusMessage(), got.Result().StructuredContent)
	}
	// Terminal is terminal, even for a statement that bypasses the fence.
	_, err = s.pool.Exec(ctx, `UPDATE `+s.q.ident+`.tasks SET status = 'working', result = NULL WHERE id = $1`, snap.ID())
	if err == nil {
		t.Fatal("a terminal task changed")
	}
	if err := s.RequestCancel(ctx, rc(snap.ID(), "acme")); err != nil {
		t.Fatalf("RequestCancel of a terminal task = %v", err)
	}
	if req, _ := s.Jobs().CancelRequested(ctx, snap.ID()); req {
		t.Error("cancellation recorded on a terminal task")
	}
}

func TestRetryExhaustion(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)
	snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, s, clk.Now())
	if err := s.Jobs().Retry(ctx, j.Lease, clk.Now().Add(time.Minute), "backing off", ""); err != nil {
		t.Fatal(err)
	}
	if got := mustFind(t, s, snap.ID(), "acme"); got.Status() != task.Working || got.StatusMessage() != "backing off" {
		t.Fatalf("after Retry: %v %q", got.Status(), got.StatusMessage())
	}
	if jobs, _ := s.Jobs().Claim(ctx, backend.ClaimParams{Limit: 1, Lease: time.Second, Now: clk.Now()}); len(jobs) != 0 {
		t.Fatal("a job was claimable before its run-at time")
	}
	clk.Advance(time.Minute)
	j = claimOne(t, s, clk.Now())
	if j.Failures != 1 {
		t.Fatalf("failures = %d", j.Failures)
	}
	if err := s.Jobs().Retry(ctx, j.Lease, time.Time{}, "again", ""); err != nil {
		t.Fatal(err)
	}
	got := mustFind(t, s, snap.ID(), "acme")
	if got.Status() != task.Failed || got.Error().Message != backend.ExhaustedError().Message {
		t.Fatalf("after exhausting retries: %v %v", got.Status(), got.Error())
	}
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)
	opts := backend.EnqueueOptions{IdempotencyKey: "k1"}
	a, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{"a":1}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{ "a": 1 }`), opts)
	if err != nil || b.ID() != a.ID() {
		t.Fatalf("retry with the same arguments = %v, %v", b.ID(), err)
	}
	if _, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{"a":2}`), opts); !errors.Is(err, backend.ErrIdempotencyConflict) {
		t.Fatalf("retry with other arguments = %v", err)
	}
	c, err := s.Enqueue(ctx, creation(t, "other", "echo", `{"a":1}`), opts)
	if err != nil || c.ID() == a.ID() {
		t.Fatalf("same key in another tenant = %v, %v", c.ID(), err)
	}
	// Concurrent creations with one key make one task.
	ids := make(chan string, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{"b":1}`), backend.EnqueueOptions{IdempotencyKey: "k2"})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- got.ID()
		})
	}
	wg.Wait()
	close(ids)
	first := ""
	for id := range ids {
		if first == "" {
			first = id
		} else if id != first {
			t.Fatalf("concurrent idempotent Enqueues made tasks %s and %s", first, id)
		}
	}
	// An expired holder frees its key.
	clk.Advance(DefaultTTL)
	d, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{"a":9}`), opts)
	if err != nil || d.ID() == a.ID() {
		t.Fatalf("key of an expired task = %v, %v", d.ID(), err)
	}
}

func TestInputRounds(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)
	snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, s, clk.Now())
	clk.Advance(time.Second)
	reqs := mcp.InputRequests{"name": formRequest("name?"), "roots": {Method: mcp.MethodRootsList}}
	if err := s.Jobs().RequestInput(ctx, j.Lease, reqs, "need input"); err != nil {
		t.Fatal(err)
	}
	got := mustFind(t, s, snap.ID(), "acme")
	if got.Status() != task.InputRequired || len(got.InputRequests()) != 2 || !got.LastUpdatedAt().After(got.CreatedAt()) {
		t.Fatalf("after RequestInput: %v %v", got.Status(), got.InputRequests())
	}
	if jobs, _ := s.Jobs().Claim(ctx, backend.ClaimParams{Limit: 5, Lease: time.Second, Now: clk.Now()}); len(jobs) != 0 {
		t.Fatal("a job awaiting input was claimable")
	}
	answer := json.RawMessage(`{"action":"accept", "content":{"price":3.50,"s":"<&>"}}`)
	err = s.UpdateTask(ctx, task.UpdateContext{RequestContext: rc(snap.ID(), "acme"), Responses: mcp.InputResponses{
		"name":    answer,
		"roots":   json.RawMessage(`{"action":"accept"}`), // wrong union variant
		"unknown": json.RawMessage(`{"roots":[]}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	got = mustFind(t, s, snap.ID(), "acme")
	if got.Status() != task.InputRequired || len(got.InputRequests()) != 1 || got.InputRequests()["roots"] == nil {
		t.Fatalf("after a partial answer: %v %v", got.Status(), got.InputRequests())
	}
	err = s.UpdateTask(ctx, task.UpdateContext{RequestContext: rc(snap.ID(), "acme"), Responses: mcp.InputResponses{
		"name":  json.RawMessage(`{"action":"decline"}`), // already answered
		"roots": json.RawMessage(`{"roots":[]}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got = mustFind(t, s, snap.ID(), "acme"); got.Status() != task.Working {
		t.Fatalf("after the last answer: %v", got.Status())
	}
	j = claimOne(t, s, clk.Now())
	if string(j.Responses["name"]) != string(answer) || string(j.Responses["roots"]) != `{"roots":[]}` {
		t.Fatalf("responses reached the worker as %s and %s", j.Responses["name"], j.Responses["roots"])
	}
	if err := s.Jobs().RequestInput(ctx, j.Lease, mcp.InputRequests{"name": formRequest("again?")}, ""); !errors.Is(err, backend.ErrKeyReused) {
		t.Fatalf("reused key = %v", err)
	}
	if err := s.Jobs().Heartbeat(ctx, j.Lease, time.Minute); err != nil {
		t.Fatalf("lease lost after ErrKeyReused: %v", err)
	}
}

func TestCancelWakesWaitingJob(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := openStore(t, newSchema(t), clk.Now)
	ctx := ctxT(t)
	snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hints := subscribe(t, s.EventPublisher(), snap.ID())
	j := claimOne(t, s, clk.Now())
	if err := s.Jobs().RequestInput(ctx, j.Lease, mcp.InputRequests{"k": formRequest("?")}, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestCancel(ctx, rc(snap.ID(), "acme")); err != nil {
		t.Fatal(err)
	}
	if req, err := s.Jobs().CancelRequested(ctx, snap.ID()); !req || err != nil {
		t.Fatalf("CancelRequested = %v, %v", req, err)
	}
	j = claimOne(t, s, clk.Now())
	if err := s.Jobs().Cancel(ctx, j.Lease, "cancelled by the client"); err != nil {
		t.Fatal(err)
	}
	if got := mustFind(t, s, snap.ID(), "acme"); got.Status() != task.Cancelled || len(got.InputRequests()) != 0 {
		t.Fatalf("after Cancel: %v", got.Status())
	}
	// Enqueue, RequestInput, RequestCancel and Cancel each published at
	// once, on this store's own broadcaster.
	if n := len(hints); n != 3 { // Enqueue was before Subscribe
		t.Fatalf("local hints = %d, want 3", n)
	}
	if _, err := s.Jobs().CancelRequested(ctx, "no-such-task"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("CancelRequested(unknown) = %v", err)
	}
}

// TestConcurrentClaims runs claimers on two stores (two nodes) over one
// schema and checks that every job completes exactly once.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	nodes := []*Store{openStore(t, schema, nil), openStore(t, schema, nil)}
	ctx := ctxT(t)
	const jobs = 200
	for i := range jobs {
		if _, err := nodes[i%2].Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	done := map[string]int{}
	var wg sync.WaitGroup
	for w := range 6 {
		s := nodes[w%2]
		wg.Go(func() {
			for {
				got, err := s.Jobs().Claim(ctx, backend.ClaimParams{Worker: "w", Limit: 7, Lease: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, j := range got {
					if err := s.Jobs().Complete(ctx, j.Lease, &mcp.CallToolResult{}, ""); err != nil {
						t.Error(err)
					}
					mu.Lock()
					done[j.TaskID]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(done) != jobs {
		t.Fatalf("completed %d jobs, want %d", len(done), jobs)
	}
	for id, n := range done {
		if n != 1 {
			t.Fatalf("job %s completed %d times", id, n)
		}
	}
	st, err := nodes[0].stats(ctx)
	// One outbox row per completion; creations have none.
	if err != nil || st.Tasks[task.Completed] != jobs || st.Jobs["done"] != jobs || st.Outbox != jobs {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	if n, err := (jobStore{nodes[0]}).PruneOutbox(ctx, time.Now().Add(time.Hour), 1000); n != jobs || err != nil {
		t.Fatalf("PruneOutbox = %d, %v", n, err)
	}
}

// TestCancelRacesRequestInput runs RequestCancel against RequestInput of the
// same task: whichever commits first, the job must end up claimable, so that
// a worker sees the intent.
func TestCancelRacesRequestInput(t *testing.T) {
	t.Parallel()
	s := openStore(t, newSchema(t), nil)
	ctx := ctxT(t)
	for i := range 20 {
		snap, err := s.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j := claimOne(t, s, time.Time{})
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := s.Jobs().RequestInput(ctx, j.Lease, mcp.InputRequests{"k": formRequest("?")}, ""); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.RequestCancel(ctx, rc(snap.ID(), "acme")); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		again := claimOne(t, s, time.Time{})
		if again.TaskID != snap.ID() {
			t.Fatalf("round %d: claimed %s", i, again.TaskID)
		}
		if err := s.Jobs().Cancel(ctx, again.Lease, ""); err != nil {
			t.Fatal(err)
		}
	}
}
