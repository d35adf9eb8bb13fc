package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

var bg = context.Background()

// testPublisher: one publisher for the backend's lifetime.
func testPublisher(t *testing.T, open opener) {
	b, _ := open(t)
	p := b.EventPublisher()
	if p == nil || p != b.EventPublisher() {
		t.Fatal("EventPublisher must return the same non-nil publisher on every call")
	}
}

// fencedWrites are the writes a lease makes, by name.
func fencedWrites(b backend.Store, l backend.Lease, c *Clock) map[string]func() error {
	return map[string]func() error{
		"Heartbeat":    func() error { return b.Jobs().Heartbeat(bg, l, lease) },
		"RequestInput": func() error { return b.Jobs().RequestInput(bg, l, mcp.InputRequests{"stale": reqElicit}, "ask") },
		"Complete":     func() error { return b.Jobs().Complete(bg, l, textResult, "done") },
		"Fail":         func() error { return b.Jobs().Fail(bg, l, toolError, "failed", "") },
		"Cancel":       func() error { return b.Jobs().Cancel(bg, l, "cancelled") },
		"Retry":        func() error { return b.Jobs().Retry(bg, l, c.Now(), "again", "") },
		"Release":      func() error { return b.Jobs().Release(bg, l) },
		"ReportProgress": func() error {
			return reporter(b).ReportProgress(bg, l, "stale progress", &task.Progress{Current: 1, Total: 2})
		},
	}
}

// sameSnapshot fails the test when two snapshots differ in anything a
// client sees.
func sameSnapshot(t *testing.T, what string, a, b task.Task) {
	t.Helper()
	ja, _ := json.Marshal(detail(a))
	jb, _ := json.Marshal(detail(b))
	if string(ja) != string(jb) {
		t.Fatalf("%s: snapshot changed:\n%s\n%s", what, ja, jb)
	}
}

func detail(t task.Task) any {
	return struct {
		Info     mcp.TaskInfo
		Requests mcp.InputRequests
		Result   *mcp.CallToolResult
		Error    *mcp.Error
		Progress *task.Progress
	}{t.Info(), t.InputRequests(), t.Result(), t.Error(), t.Params().Progress}
}

// testFencing: a lease that expired, was rescued and reclaimed, or merely
// expired, can no longer write, and its attempts change nothing.
func testFencing(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 5})
	first := claimOne(t, b, c, tk.ID())
	if first.Attempt < 1 || first.Failures != 0 || first.MaxAttempts != 5 || first.Kind != toolA {
		t.Fatalf("first claim: attempt %d failures %d max %d kind %q", first.Attempt, first.Failures, first.MaxAttempts, first.Kind)
	}
	if want := c.Now().Add(lease); !first.LeaseExpires.Equal(want) {
		t.Fatalf("LeaseExpires = %v, want %v", first.LeaseExpires, want)
	}

	// Expired, not yet rescued: every write is refused.
	c.Advance(lease)
	before := mustFind(t, b, tk.ID())
	for name, write := range fencedWrites(b, first.Lease, c) {
		wantErr(t, "expired lease: "+name, write(), "ErrLeaseLost")
	}
	sameSnapshot(t, "after writes of an expired lease", before, mustFind(t, b, tk.ID()))

	if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 1 {
		t.Fatalf("RescueExpired = %d, %v; want 1", n, err)
	}
	second := claimOne(t, b, c, tk.ID())
	if second.Attempt <= first.Attempt || second.Failures != 0 || second.InterruptedRuns != 1 {
		t.Fatalf("reclaim: attempt %d (first %d), failures %d, interrupted runs %d", second.Attempt, first.Attempt,
			second.Failures, second.InterruptedRuns)
	}
	before = mustFind(t, b, tk.ID())
	for name, write := range fencedWrites(b, first.Lease, c) {
		wantErr(t, "stale lease: "+name, write(), "ErrLeaseLost")
	}
	sameSnapshot(t, "after writes of a stale lease", before, mustFind(t, b, tk.ID()))

	// The current lease still works, once.
	wantErr(t, "current Heartbeat", b.Jobs().Heartbeat(bg, second.Lease, lease), "ok")
	wantErr(t, "current Complete", b.Jobs().Complete(bg, second.Lease, textResult, "done"), "ok")
	done := mustFind(t, b, tk.ID())
	if done.Status() != task.Completed || done.Result() == nil || done.StatusMessage() != "done" {
		t.Fatalf("after Complete: %v", done)
	}
	for name, write := range fencedWrites(b, second.Lease, c) {
		wantErr(t, "finished lease: "+name, write(), "ErrLeaseLost")
	}
	sameSnapshot(t, "terminal task", done, mustFind(t, b, tk.ID()))

	// A lease on a task that never existed.
	wantErr(t, "unknown task", b.Jobs().Heartbeat(bg, backend.Lease{TaskID: "nope", Attempt: 1}, lease), "ErrLeaseLost")
}

// testIdempotency: keys dedupe per tenant, endpoint and tool.
func testIdempotency(t *testing.T, open opener) {
	b, c := open(t)
	opts := backend.EnqueueOptions{IdempotencyKey: "req-1", TTL: time.Hour}
	mk := func(endpoint, tenant, tool, args string) (task.Task, error) {
		return b.Enqueue(bg, creation(t, endpoint, tenant, tool, args), opts)
	}
	first, err := mk(endpointA, tenantA, toolA, `{"n":1}`)
	if err != nil {
		t.Fatal(err)
	}
	again, err := mk(endpointA, tenantA, toolA, `{"n":1}`)
	if err != nil || again.ID() != first.ID() {
		t.Fatalf("same key: got %v, %v; want task %s", again.ID(), err, first.ID())
	}
	// The existing task is returned as it is now.
	j := claimOne(t, b, c, first.ID())
	c.Advance(time.Millisecond)
	if err := b.Jobs().Complete(bg, j.Lease, textResult, ""); err != nil {
		t.Fatal(err)
	}
	again, err = mk(endpointA, tenantA, toolA, `{"n":1}`)
	if err != nil || again.ID() != first.ID() || again.Status() != task.Completed {
		t.Fatalf("same key after completion: %v %v %v", again.ID(), again.Status(), err)
	}
	ids := map[string]bool{first.ID(): true}
	for _, v := range []struct{ endpoint, tenant, tool string }{
		{endpointA, tenantB, toolA}, {endpointB, tenantA, toolA}, {endpointA, tenantA, toolB},
	} {
		other, err := mk(v.endpoint, v.tenant, v.tool, `{"n":1}`)
		if err != nil || ids[other.ID()] {
			t.Fatalf("key under %v: %v, %v; want a new task", v, other.ID(), err)
		}
		ids[other.ID()] = true
	}
	if _, err := mk(endpointA, tenantA, toolA, `{"n":2}`); errClass(err) != "ErrIdempotencyConflict" {
		t.Fatalf("other arguments: got %v, want ErrIdempotencyConflict", err)
	}
	// The same values spelt by another serializer are the same arguments;
	// other values, or numbers spelt otherwise, are not.
	first, err = b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{"n":1,"opts":{"tags":["a","é"],"deep":{"x":null,"y":true}}}`),
		backend.EnqueueOptions{IdempotencyKey: "req-2", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ids[first.ID()] = true
	for _, tc := range []struct{ args, want string }{
		{`{"n": 1, "opts": {"tags": ["a", "é"], "deep": {"x": null, "y": true}}}`, "ok"},
		{`{"opts":{"deep":{"y":true,"x":null},"tags":["a","\u00e9"]},"n":1}`, "ok"},
		{"{\n  \"opts\" : {\"tags\":[\"a\",\"\\u00e9\"],\"deep\":{\"x\":null,\"y\":true}},\n  \"n\" : 1\n}", "ok"},
		{`{"n":1.0,"opts":{"tags":["a","é"],"deep":{"x":null,"y":true}}}`, "ErrIdempotencyConflict"},
		{`{"n":1,"opts":{"tags":["é","a"],"deep":{"x":null,"y":true}}}`, "ErrIdempotencyConflict"},
		{`{"n":1,"opts":{"tags":["a","é"],"deep":{"x":null}}}`, "ErrIdempotencyConflict"},
		{`{"n":2}`, "ErrIdempotencyConflict"},
	} {
		got, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, tc.args), backend.EnqueueOptions{IdempotencyKey: "req-2", TTL: time.Hour})
		if errClass(err) != tc.want || (err == nil && got.ID() != first.ID()) {
			t.Errorf("key req-2 with %q: got %v, %v; want %s with task %s", tc.args, got.ID(), err, tc.want, first.ID())
		}
	}
	// Without a key every call creates a task.
	x := enqueue(t, b, backend.EnqueueOptions{})
	y := enqueue(t, b, backend.EnqueueOptions{})
	if x.ID() == y.ID() || ids[x.ID()] || ids[y.ID()] {
		t.Fatal("enqueues without a key must create distinct tasks")
	}
	// An expired task frees its key.
	c.Advance(time.Hour)
	fresh, err := mk(endpointA, tenantA, toolA, `{"n":2}`)
	if err != nil || ids[fresh.ID()] || fresh.Status() != task.Working {
		t.Fatalf("key of an expired task: %v %v", fresh.ID(), err)
	}
}

// testAuthorization: other tenants and endpoints see nothing and change
// nothing.
func testAuthorization(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{})
	j := claimOne(t, b, c, tk.ID())
	if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k": reqElicit}, ""); err != nil {
		t.Fatal(err)
	}
	before := mustFind(t, b, tk.ID())
	for _, r := range []task.RequestContext{
		rc(tk.ID(), endpointA, tenantB), rc(tk.ID(), endpointB, tenantA), rc(tk.ID(), endpointB, tenantB),
		rc("unknown-task", endpointA, tenantA), rc(tk.ID(), endpointA, ""), rc(tk.ID(), "", tenantA),
	} {
		if _, ok, err := b.FindTask(bg, r); ok || err != nil {
			t.Fatalf("FindTask as %s/%s: found %v, err %v", r.Endpoint, r.Tenant, ok, err)
		}
		wantErr(t, "UpdateTask", b.UpdateTask(bg, task.UpdateContext{RequestContext: r,
			Responses: mcp.InputResponses{"k": respElicit}}), "ErrNotFound")
		wantErr(t, "RequestCancel", b.RequestCancel(bg, r), "ErrNotFound")
	}
	sameSnapshot(t, "after unauthorized calls", before, mustFind(t, b, tk.ID()))
	if yes, err := b.Jobs().CancelRequested(bg, tk.ID()); err != nil || yes {
		t.Fatalf("CancelRequested = %v, %v after unauthorized cancel", yes, err)
	}
	// The principal is not part of the binding.
	r := rc(tk.ID(), endpointA, tenantA)
	r.Principal = "someone-else"
	if _, ok, _ := b.FindTask(bg, r); !ok {
		t.Fatal("FindTask with another principal of the same tenant: not found")
	}
	if _, err := b.Jobs().CancelRequested(bg, "unknown-task"); errClass(err) != "ErrNotFound" {
		t.Fatalf("CancelRequested(unknown) = %v, want ErrNotFound", err)
	}
}

// update sends responses as the task's owner.
func update(t *testing.T, b backend.Store, id string, resp mcp.InputResponses) {
	t.Helper()
	if err := b.UpdateTask(bg, task.UpdateContext{RequestContext: rc(id, endpointA, tenantA), Responses: resp}); err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
}

func keysOf[M ~map[string]V, V any](m M) []string { return slices.Sorted(maps.Keys(m)) }

// testInputRounds: answers are accepted once per key and variant, kept for
// the task's lifetime, and keys never repeat. Each round is counted in
// InputRounds, so that the claim resuming it continues the same attempt
// (AttemptNumber) under a new fencing Attempt, which the asking run's lease
// cannot write with.
func testInputRounds(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{})
	j := claimOne(t, b, c, tk.ID())
	if j.InputRounds != 0 || j.AttemptNumber() != 1 {
		t.Fatalf("first claim: %d input rounds, attempt number %d; want 0, 1", j.InputRounds, j.AttemptNumber())
	}
	c.Advance(time.Millisecond)
	if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k1": reqElicit, "k2": reqSample}, "need input"); err != nil {
		t.Fatal(err)
	}
	got := mustFind(t, b, tk.ID())
	if got.Status() != task.InputRequired || !slices.Equal(keysOf(got.InputRequests()), []string{"k1", "k2"}) ||
		got.StatusMessage() != "need input" || !got.LastUpdatedAt().Equal(c.Now()) {
		t.Fatalf("after RequestInput: %v %v %q %v", got.Status(), keysOf(got.InputRequests()), got.StatusMessage(), got.LastUpdatedAt())
	}
	if r := got.InputRequests()["k2"]; r.Method != mcp.MethodSamplingCreateMessage || compactJSON(r.Params) != compactJSON(reqSample.Params) {
		t.Fatalf("stored request k2 = %s %s", r.Method, r.Params)
	}
	wantErr(t, "Heartbeat after RequestInput", b.Jobs().Heartbeat(bg, j.Lease, lease), "ErrLeaseLost")
	if jobs := claim(t, b, c, 5); len(jobs) != 0 {
		t.Fatal("a job awaiting input was claimed")
	}
	// k1 right, k2 wrong variant, unknown key: only k1 is accepted.
	c.Advance(time.Millisecond)
	update(t, b, tk.ID(), mcp.InputResponses{"k1": respElicit, "k2": respElicit, "zz": respRoots})
	got = mustFind(t, b, tk.ID())
	if got.Status() != task.InputRequired || !slices.Equal(keysOf(got.InputRequests()), []string{"k2"}) {
		t.Fatalf("after partial answer: %v %v", got.Status(), keysOf(got.InputRequests()))
	}
	// A second answer to k1 is ignored.
	update(t, b, tk.ID(), mcp.InputResponses{"k1": json.RawMessage(`{"action":"decline"}`)})
	if jobs := claim(t, b, c, 5); len(jobs) != 0 {
		t.Fatal("a job with unanswered requests was claimed")
	}
	// Responses are kept byte for byte.
	spaced := json.RawMessage("{ \"role\": \"assistant\", \"content\": {\"type\":\"text\", \"text\": \"<1.50> \\u00e9\"},\n \"model\": \"m\" }")
	update(t, b, tk.ID(), mcp.InputResponses{"k2": spaced})
	if got = mustFind(t, b, tk.ID()); got.Status() != task.Working || len(got.InputRequests()) != 0 || got.StatusMessage() != "" {
		t.Fatalf("after all answers: %v %v %q", got.Status(), keysOf(got.InputRequests()), got.StatusMessage())
	}
	j2 := claimOne(t, b, c, tk.ID())
	if j2.Attempt <= j.Attempt || j2.Failures != 0 || j2.InputRounds != 1 || j2.AttemptNumber() != 1 {
		t.Fatalf("resumed claim: attempt %d (was %d) failures %d input rounds %d attempt number %d; want 1 round, number 1",
			j2.Attempt, j.Attempt, j2.Failures, j2.InputRounds, j2.AttemptNumber())
	}
	wantResponses(t, j2.Responses, mcp.InputResponses{"k1": respElicit, "k2": spaced})
	before := mustFind(t, b, tk.ID())
	for name, write := range fencedWrites(b, j.Lease, c) {
		wantErr(t, "the asking run's lease after the resumed claim: "+name, write(), "ErrLeaseLost")
	}
	sameSnapshot(t, "after writes of the asking run's lease", before, mustFind(t, b, tk.ID()))

	// Keys are unique for the task's lifetime; a refused request changes
	// nothing and keeps the lease.
	before = mustFind(t, b, tk.ID())
	for _, k := range []string{"k1", "k2"} {
		wantErr(t, "reused key "+k, b.Jobs().RequestInput(bg, j2.Lease, mcp.InputRequests{"new": reqRoots, k: reqRoots}, ""), "ErrKeyReused")
	}
	sameSnapshot(t, "after a refused RequestInput", before, mustFind(t, b, tk.ID()))
	wantErr(t, "Heartbeat after ErrKeyReused", b.Jobs().Heartbeat(bg, j2.Lease, lease), "ok")
	if err := b.Jobs().RequestInput(bg, j2.Lease, mcp.InputRequests{"k3": reqRoots, "k4": reqURL}, ""); err != nil {
		t.Fatal(err)
	}
	update(t, b, tk.ID(), mcp.InputResponses{"k3": respRoots, "k4": json.RawMessage(`{"action":"cancel"}`)})
	j3 := claimOne(t, b, c, tk.ID())
	if j3.InputRounds != 2 || j3.AttemptNumber() != 1 || j3.Failures != 0 {
		t.Fatalf("second resumed claim: %d input rounds, attempt number %d, %d failures; want 2, 1, 0",
			j3.InputRounds, j3.AttemptNumber(), j3.Failures)
	}
	wantResponses(t, j3.Responses, mcp.InputResponses{"k1": respElicit, "k2": spaced, "k3": respRoots,
		"k4": json.RawMessage(`{"action":"cancel"}`)})
	if err := b.Jobs().Complete(bg, j3.Lease, textResult, ""); err != nil {
		t.Fatal(err)
	}
	if got = mustFind(t, b, tk.ID()); got.Status() != task.Completed {
		t.Fatalf("status %v", got.Status())
	}
	// Updating a terminal task is accepted and ignored.
	update(t, b, tk.ID(), mcp.InputResponses{"k5": respRoots})
	sameSnapshot(t, "update of a terminal task", got, mustFind(t, b, tk.ID()))
}

func wantResponses(t *testing.T, got, want mcp.InputResponses) {
	t.Helper()
	if !slices.Equal(keysOf(got), keysOf(want)) {
		t.Fatalf("Responses keys = %v, want %v", keysOf(got), keysOf(want))
	}
	for k, w := range want {
		if string(got[k]) != string(w) {
			t.Fatalf("Responses[%s] = %s, want %s", k, got[k], w)
		}
	}
}

// testOriginBytes: the origin survives storage byte for byte.
func testOriginBytes(t *testing.T, open opener) {
	b, c := open(t)
	args := "{ \"b\": 1.0, \"a\" : 1e0, \"big\": 123456789012345678901234567890,\n" +
		"  \"s\": \"\\u00e9\\\"\\\\\\/ \u2028\", \"neg\": -0.0, \"e\": [1E+2, 0.10], \"a\": 2 }"
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: "2026-07-28", Endpoint: endpointA, Operation: "tools/call", Tool: toolA,
		Arguments: json.RawMessage(args), InputKinds: []string{task.InputSampling, task.InputRoots},
		OutputSchema: json.RawMessage(`{"type":"object", "properties":{"x":{"type":"number"}}}`), MirrorStructured: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cc := &task.CreationContext{Request: task.RequestContext{Endpoint: endpointA, Tenant: tenantA}, Origin: o}
	tk, err := b.Enqueue(bg, cc, backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !tk.Origin().Equal(o) {
		t.Fatal("Enqueue's snapshot has another origin")
	}
	got := mustFind(t, b, tk.ID())
	if string(got.Origin().Persisted()) != string(o.Persisted()) || string(got.Origin().Params().Arguments) != args {
		t.Fatalf("origin changed in storage:\n%q\n%q", got.Origin().Params().Arguments, args)
	}
	j := claimOne(t, b, c, tk.ID())
	if !j.Origin.Equal(o) || string(j.Origin.Params().Arguments) != args {
		t.Fatal("claimed job has another origin")
	}
}

// event is what a subscriber saw when it read the task on a hint.
type event struct {
	id     string
	found  bool
	status task.Status
	keys   string
}

// testEvents: hints come after commit, so a subscriber that reads the task
// on a hint sees the change.
func testEvents(t *testing.T, open opener) {
	b, c := open(t)
	events := make(chan event, 100)
	unsubscribe := b.EventPublisher().Subscribe(func(id string) {
		// Subscribers must not block; a read of a local store is quick.
		tk, ok, err := b.FindTask(bg, rc(id, endpointA, tenantA))
		if err != nil {
			t.Errorf("FindTask in subscriber: %v", err)
		}
		events <- event{id: id, found: ok, status: tk.Status(), keys: fmt.Sprint(keysOf(tk.InputRequests()))}
	})
	defer unsubscribe()
	await := func(what string, want event) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case e := <-events:
				if e == want {
					return
				}
			case <-timeout:
				t.Fatalf("%s: no hint after which the task read as %+v", what, want)
			}
		}
	}
	tk := enqueue(t, b, backend.EnqueueOptions{})
	await("Enqueue", event{tk.ID(), true, task.Working, "[]"})
	j := claimOne(t, b, c, tk.ID())
	if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"a": reqRoots, "b": reqRoots}, ""); err != nil {
		t.Fatal(err)
	}
	await("RequestInput", event{tk.ID(), true, task.InputRequired, "[a b]"})
	update(t, b, tk.ID(), mcp.InputResponses{"a": respRoots})
	await("partial UpdateTask", event{tk.ID(), true, task.InputRequired, "[b]"})
	update(t, b, tk.ID(), mcp.InputResponses{"b": respRoots})
	await("UpdateTask", event{tk.ID(), true, task.Working, "[]"})
	j = claimOne(t, b, c, tk.ID())
	if err := b.Jobs().Fail(bg, j.Lease, toolError, "", ""); err != nil {
		t.Fatal(err)
	}
	await("Fail", event{tk.ID(), true, task.Failed, "[]"})

	other := enqueue(t, b, backend.EnqueueOptions{})
	await("Enqueue", event{other.ID(), true, task.Working, "[]"})
	if err := b.RequestCancel(bg, rc(other.ID(), endpointA, tenantA)); err != nil {
		t.Fatal(err)
	}
	await("RequestCancel", event{other.ID(), true, task.Working, "[]"})
	j = claimOne(t, b, c, other.ID())
	if err := b.Jobs().Cancel(bg, j.Lease, ""); err != nil {
		t.Fatal(err)
	}
	await("Cancel", event{other.ID(), true, task.Cancelled, "[]"})
}

// testTTL: expired tasks are gone for clients and claims, and deletion is
// bounded.
func testTTL(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{TTL: time.Second, PollInterval: 250 * time.Millisecond})
	got := mustFind(t, b, tk.ID())
	if got.TTL() != time.Second || got.PollInterval() != 250*time.Millisecond || !got.CreatedAt().Equal(Epoch) {
		t.Fatalf("TTL %v poll %v created %v", got.TTL(), got.PollInterval(), got.CreatedAt())
	}
	unlimited := enqueue(t, b, backend.EnqueueOptions{TTL: -1})
	if got := mustFind(t, b, unlimited.ID()); got.TTL() != 0 {
		t.Fatalf("negative TTL stored as %v, want 0 (unlimited)", got.TTL())
	}
	c.Advance(time.Second - time.Millisecond)
	mustFind(t, b, tk.ID())
	c.Advance(time.Millisecond)
	if _, ok := find(t, b, tk.ID()); ok {
		t.Fatal("task found at its expiry time")
	}
	wantErr(t, "UpdateTask of an expired task", b.UpdateTask(bg, task.UpdateContext{RequestContext: rc(tk.ID(), endpointA, tenantA)}), "ErrNotFound")
	wantErr(t, "RequestCancel of an expired task", b.RequestCancel(bg, rc(tk.ID(), endpointA, tenantA)), "ErrNotFound")
	if _, err := b.Jobs().CancelRequested(bg, tk.ID()); errClass(err) != "ErrNotFound" {
		t.Fatalf("CancelRequested of an expired task: %v", err)
	}
	if jobs := claim(t, b, c, 10); len(jobs) != 1 || jobs[0].TaskID != unlimited.ID() {
		t.Fatalf("Claim returned %d jobs; want only the unexpired one", len(jobs))
	}

	var expired []string
	for range 5 {
		expired = append(expired, enqueue(t, b, backend.EnqueueOptions{TTL: time.Minute}).ID())
	}
	lj := claim(t, b, c, 1)[0]
	c.Advance(time.Minute)
	for _, want := range []int{2, 2, 2, 0} {
		if n, err := b.Jobs().DeleteExpired(bg, c.Now(), 2); err != nil || n != want {
			t.Fatalf("DeleteExpired(2) = %d, %v; want %d", n, err, want)
		}
	}
	wantErr(t, "Complete of a deleted task", b.Jobs().Complete(bg, lj.Lease, textResult, ""), "ErrLeaseLost")
	mustFind(t, b, unlimited.ID())
	c.Advance(1000 * time.Hour)
	if n, err := b.Jobs().DeleteExpired(bg, c.Now(), 10); err != nil || n != 0 {
		t.Fatalf("DeleteExpired of unlimited tasks = %d, %v", n, err)
	}
	mustFind(t, b, unlimited.ID())
}

// testRescue: rescue takes only expired leases, respects its limit, counts
// interrupted runs (not failures), and fails tasks whose jobs reached the
// limit of interrupted runs.
func testRescue(t *testing.T, open opener) {
	b, c := open(t)
	var ids []string
	for range 5 {
		ids = append(ids, enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 1}).ID())
	}
	jobs := claim(t, b, c, 10)
	if len(jobs) != 5 {
		t.Fatalf("claimed %d", len(jobs))
	}
	rescue := func(limit int) (int, error) {
		return b.Jobs().RescueExpired(bg, backend.RescueParams{Now: c.Now(), Limit: limit, MaxInterruptedRuns: 2})
	}
	if n, err := rescue(10); err != nil || n != 0 {
		t.Fatalf("RescueExpired of live leases = %d, %v", n, err)
	}
	c.Advance(lease / 2)
	if err := b.Jobs().Heartbeat(bg, jobs[0].Lease, lease); err != nil {
		t.Fatal(err)
	}
	c.Advance(lease / 2)
	for _, want := range []int{2, 2, 0} {
		if n, err := rescue(2); err != nil || n != want {
			t.Fatalf("RescueExpired(2) = %d, %v; want %d", n, err, want)
		}
	}
	for _, id := range ids {
		if got := mustFind(t, b, id); got.Status() != task.Working {
			t.Fatalf("rescued task is %v", got.Status())
		}
	}
	again := claim(t, b, c, 10)
	if len(again) != 4 {
		t.Fatalf("reclaimed %d, want 4", len(again))
	}
	for _, j := range again {
		if j.Failures != 0 || j.InterruptedRuns != 1 || j.TaskID == jobs[0].TaskID {
			t.Fatalf("reclaimed %s with %d failures, %d interrupted runs", j.TaskID, j.Failures, j.InterruptedRuns)
		}
	}
	c.Advance(lease)
	if n, err := rescue(10); err != nil || n != 5 {
		t.Fatalf("RescueExpired = %d, %v; want 5", n, err)
	}
	for _, j := range again {
		got := mustFind(t, b, j.TaskID)
		if got.Status() != task.Failed || !isExhausted(got.Error()) {
			t.Fatalf("task at its limit of interrupted runs: %v %+v", got.Status(), got.Error())
		}
	}
	if got := mustFind(t, b, jobs[0].TaskID); got.Status() != task.Working {
		t.Fatalf("task with one interrupted run: %v", got.Status())
	}
	if left := claim(t, b, c, 10); len(left) != 1 || left[0].TaskID != jobs[0].TaskID {
		t.Fatalf("claim after exhaustion: %d jobs", len(left))
	}
}

// testRetry: Retry delays the job and counts a failure; the last allowed
// failure fails the task.
func testRetry(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 2, RunAt: Epoch.Add(time.Second)})
	if jobs := claim(t, b, c, 1); len(jobs) != 0 {
		t.Fatal("claimed a job before its run-at time")
	}
	c.Advance(time.Second)
	j := claimOne(t, b, c, tk.ID())
	if err := b.Jobs().Retry(bg, j.Lease, c.Now().Add(time.Minute), "retrying", ""); err != nil {
		t.Fatal(err)
	}
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Working || got.StatusMessage() != "retrying" {
		t.Fatalf("after Retry: %v %q", got.Status(), got.StatusMessage())
	}
	c.Advance(time.Minute - time.Millisecond)
	if jobs := claim(t, b, c, 1); len(jobs) != 0 {
		t.Fatal("claimed a retried job early")
	}
	c.Advance(time.Millisecond)
	j = claimOne(t, b, c, tk.ID())
	if j.Failures != 1 {
		t.Fatalf("failures %d", j.Failures)
	}
	if err := b.Jobs().Release(bg, j.Lease); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, b, c, tk.ID())
	if j.Failures != 1 {
		t.Fatalf("Release counted a failure: %d", j.Failures)
	}
	if err := b.Jobs().Retry(bg, j.Lease, c.Now(), "again", ""); err != nil {
		t.Fatal(err)
	}
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Failed || !isExhausted(got.Error()) {
		t.Fatalf("after the last Retry: %v %+v", got.Status(), got.Error())
	}
}

// testRetryUnavailable: Retry notes the time of a job's first failure and
// keeps it, and a FailureUnavailable failure is retried past MaxAttempts
// (the runtime bounds it by time), while any other category still fails
// the task at MaxAttempts.
func testRetryUnavailable(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 2})
	j := claimOne(t, b, c, tk.ID())
	if !j.FirstFailure.IsZero() {
		t.Fatalf("first claim: FirstFailure %v, want none", j.FirstFailure)
	}
	first := c.Now()
	for i := 1; i <= 3; i++ {
		if err := b.Jobs().Retry(bg, j.Lease, c.Now(), "unavailable", backend.FailureUnavailable); err != nil {
			t.Fatal(err)
		}
		if got := mustFind(t, b, tk.ID()); got.Status() != task.Working {
			t.Fatalf("after unavailable failure %d of MaxAttempts 2: %v", i, got.Status())
		}
		c.Advance(time.Minute)
		j = claimOne(t, b, c, tk.ID())
		if j.Failures != i || !j.FirstFailure.Equal(first) {
			t.Fatalf("claim after failure %d: failures %d, FirstFailure %v; want %d, %v", i, j.Failures, j.FirstFailure, i, first)
		}
	}
	if err := b.Jobs().Retry(bg, j.Lease, c.Now(), "again", backend.FailureHandlerError); err != nil {
		t.Fatal(err)
	}
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Failed || !isExhausted(got.Error()) {
		t.Fatalf("after a handler error past MaxAttempts: %v %+v", got.Status(), got.Error())
	}
}

// testCancelAwaitingInput: cancellation intent makes a parked job
// claimable so a worker can cancel it; terminal tasks ignore it.
func testCancelAwaitingInput(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{})
	j := claimOne(t, b, c, tk.ID())
	if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k": reqElicit}, ""); err != nil {
		t.Fatal(err)
	}
	r := rc(tk.ID(), endpointA, tenantA)
	for range 2 { // idempotent
		if err := b.RequestCancel(bg, r); err != nil {
			t.Fatal(err)
		}
	}
	if yes, err := b.Jobs().CancelRequested(bg, tk.ID()); !yes || err != nil {
		t.Fatalf("CancelRequested = %v, %v", yes, err)
	}
	j = claimOne(t, b, c, tk.ID())
	if got := mustFind(t, b, tk.ID()); got.Status() != task.InputRequired {
		t.Fatalf("claim changed the status to %v", got.Status())
	}
	if err := b.Jobs().Cancel(bg, j.Lease, "cancelled"); err != nil {
		t.Fatal(err)
	}
	done := mustFind(t, b, tk.ID())
	if done.Status() != task.Cancelled || len(done.InputRequests()) != 0 {
		t.Fatalf("after Cancel: %v", done.Status())
	}
	if err := b.RequestCancel(bg, r); err != nil {
		t.Fatalf("RequestCancel of a terminal task: %v", err)
	}
	sameSnapshot(t, "cancel of a terminal task", done, mustFind(t, b, tk.ID()))
}

// spareInterruptedRuns is a limit of interrupted runs that the one or two
// rescues of a case never reach (the worker runtime's default is 20). The
// suite names its own value so that the stores' tests need not link the
// runtime.
const spareInterruptedRuns = 20

// rescueParams are a RescueExpired at the clock's time whose limit of
// interrupted runs no case reaches.
func rescueParams(c *Clock, limit int) backend.RescueParams {
	return backend.RescueParams{Now: c.Now(), Limit: limit, MaxInterruptedRuns: spareInterruptedRuns}
}

// isExhausted reports whether e is the error of a job that used its
// attempts.
func isExhausted(e *mcp.Error) bool {
	return e != nil && e.Code == exhausted.Code && e.Message == exhausted.Message && len(e.Data) == 0
}
