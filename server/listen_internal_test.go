package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// White-box tests of the per-subscription queue, the registry and the
// renewal schedule.

func newTestSubscription(tenant string) *subscription {
	return &subscription{
		tenant: tenant, watching: map[string]bool{},
		queued: map[string]bool{}, wake: make(chan struct{}, 1),
		last: map[string]sentState{}, terminal: map[string]bool{},
	}
}

func drain(s *subscription) []string {
	var out []string
	for {
		id, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, id)
	}
}

// TestSubscriptionQueue: distinct IDs keep first-event order; a repeated
// hint for a queued ID keeps its place; a hint for an ID being looked up
// (already popped) queues it again behind the others; enqueue never blocks.
func TestSubscriptionQueue(t *testing.T) {
	s := newTestSubscription("t")
	s.accept(map[string]bool{"a": true, "b": true, "c": true})
	for _, id := range []string{"a", "b", "a", "c", "b", "a"} {
		s.enqueue(id)
	}
	if id, _ := s.next(); id != "a" {
		t.Fatalf("first = %q", id)
	}
	s.enqueue("a") // a hint while a is being looked up
	s.enqueue("b") // already queued: keeps its place
	if diff := cmp.Diff([]string{"b", "c", "a"}, drain(s)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	// A thousand hints without a reader neither block nor grow the queue
	// beyond the distinct accepted IDs; one wake-up is pending.
	for i := range 1000 {
		s.enqueue([]string{"a", "b", "c", "x"}[i%4])
	}
	if len(s.queue) != 3 || len(s.wake) != 1 {
		t.Errorf("queue %q, %d wake-ups", s.queue, len(s.wake))
	}
	drain(s)
}

// TestSubscriptionActivation: before acceptance every hint is kept (the
// activation gap); accept keeps only accepted IDs, in their order, and
// later hints for other IDs are ignored. No snapshot is invented: an
// accepted ID without a hint is not queued.
func TestSubscriptionActivation(t *testing.T) {
	s := newTestSubscription("t")
	for _, id := range []string{"x", "a", "y", "b", "a"} {
		s.enqueue(id)
	}
	s.accept(map[string]bool{"a": true, "b": true, "c": true})
	s.enqueue("x")
	s.enqueue("c")
	if diff := cmp.Diff([]string{"a", "b", "c"}, drain(s)); diff != "" {
		t.Errorf("after activation (-want +got):\n%s", diff)
	}
	if len(s.queued) != 0 {
		t.Errorf("queued set %v", s.queued)
	}
	// Reconciliation fences queued work of revoked IDs.
	s.enqueue("a")
	s.enqueue("b")
	s.enqueue("c")
	s.accept(map[string]bool{"b": true})
	s.enqueue("a")
	if diff := cmp.Diff([]string{"b"}, drain(s)); diff != "" {
		t.Errorf("after narrowing (-want +got):\n%s", diff)
	}
}

// TestRegistry: capacity in total and per tenant, routing of hints to the
// subscriptions that follow an ID only, and release forgetting everything.
func TestRegistry(t *testing.T) {
	r := newRegistry(3, 2)
	if !r.reserve("a") || !r.reserve("a") || r.reserve("a") {
		t.Fatal("per-tenant capacity")
	}
	if !r.reserve("b") || r.reserve("c") {
		t.Fatal("total capacity")
	}
	s1, s2, s3 := newTestSubscription("a"), newTestSubscription("a"), newTestSubscription("b")
	for _, s := range []*subscription{s1, s2, s3} {
		s.accept(map[string]bool{"t1": true, "t2": true})
	}
	r.watch(s1, []string{"t1", "t2"})
	r.watch(s2, []string{"t2"})
	r.hint("t1")
	r.hint("t2")
	r.hint("t3")
	if got := [][]string{drain(s1), drain(s2), drain(s3)}; !cmp.Equal(got, [][]string{{"t1", "t2"}, {"t2"}, nil}) {
		t.Errorf("routing %q", got)
	}
	r.unwatch(s1, "t1")
	r.hint("t1")
	if got := drain(s1); got != nil {
		t.Errorf("hint after unwatch: %q", got)
	}
	r.release(s1)
	r.release(s2)
	if len(r.byTask) != 0 || r.count() != 1 || r.perTenant["a"] != 0 || len(r.perTenant) != 1 {
		t.Errorf("after release: byTask %v, total %d, perTenant %v", r.byTask, r.count(), r.perTenant)
	}
	if !r.reserve("a") {
		t.Error("released capacity is not free")
	}

	// bind: a bound context ends on close; stop releases it.
	ctx, stop := r.bind(context.Background())
	kept, stopKept := r.bind(context.Background())
	stopKept()
	r.close()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("close did not cancel the bound context")
	}
	stop()
	if context.Cause(kept) != context.Canceled {
		t.Errorf("stopped context: %v", context.Cause(kept))
	}
	if r.reserve("z") {
		t.Error("a closed registry accepts listens")
	}
	r.close() // idempotent
}

// TestRenewalDelay: half the remaining lease plus a stagger below
// min(1 s, lease/20).
func TestRenewalDelay(t *testing.T) {
	now := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	for _, lease := range []time.Duration{time.Millisecond, 19 * time.Nanosecond, time.Second, 10 * time.Second, 20 * time.Second, time.Minute, time.Hour} {
		stagger := min(time.Second, lease/20)
		seen := map[time.Duration]bool{}
		for range 2000 {
			d := renewalDelay(now, now.Add(lease))
			if d < lease/2 || (stagger > 0 && d >= lease/2+stagger) || (stagger == 0 && d != lease/2) {
				t.Fatalf("lease %v: delay %v, want [%v, %v)", lease, d, lease/2, lease/2+stagger)
			}
			seen[d] = true
		}
		if stagger > time.Millisecond && len(seen) < 100 {
			t.Errorf("lease %v: only %d distinct delays", lease, len(seen))
		}
	}
	if d := renewalDelay(now, now); d != 0 {
		t.Errorf("expired lease: %v", d)
	}
	if d := renewalDelay(now, now.Add(-time.Minute)); d != 0 {
		t.Errorf("past lease: %v", d)
	}
}

// TestMaintenanceConcurrency: subscription lookups and renewals share
// max(1, HandlerConcurrency/2) slots, 16 with the defaults.
func TestMaintenanceConcurrency(t *testing.T) {
	for hc, want := range map[int]int{0: 16, 1: 1, 2: 1, 3: 1, 5: 2, 32: 16, 64: 32} {
		srv, err := New(Options{
			Endpoints:          []*Endpoint{NewEndpoint(EndpointOptions{Path: "/mcp", Name: "m", Version: "1"})},
			HandlerConcurrency: hc,
			Subscriptions:      &SubscriptionOptions{Authorizer: AllowSubscriptions(time.Minute)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := cap(srv.maintenance); got != want {
			t.Errorf("HandlerConcurrency %d: %d maintenance slots, want %d", hc, got, want)
		}
		if srv.opts.Subscriptions.WriteTimeout != 10*time.Second || srv.opts.Subscriptions.AuthorizationTimeout != 5*time.Second ||
			srv.opts.Subscriptions.MaxSubscriptions != 8192 || srv.opts.Subscriptions.MaxPerTenant != 1024 || srv.opts.Subscriptions.MaxLifetime != time.Hour {
			t.Errorf("defaults %+v", srv.opts.Subscriptions)
		}
	}
}

// TestListenForgetsTerminalTasks: once a task's terminal snapshot is sent,
// the subscription stops following it and keeps nothing of it but its ID;
// the last body is kept only for tasks still followed.
func TestListenForgetsTerminalTasks(t *testing.T) {
	m, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep := NewEndpoint(EndpointOptions{Path: "/mcp", Name: "e", Version: "1", TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	ep.AddRawTaskTool(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *Request) (*mcp.CallToolResult, *task.Handle, error) {
			tk, err := m.Create(req.TaskCreation())
			return nil, &task.Handle{ID: tk.ID()}, err
		})
	srv, err := New(Options{Endpoints: []*Endpoint{ep}, TaskManager: m,
		Subscriptions: &SubscriptionOptions{Authorizer: AllowSubscriptions(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	c := mcptest.NewClient(srv, "/mcp")
	c.DeclareTasks()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for range 3 {
		res, err := c.CallTool(ctx, "job", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := res.TaskHandle()
		if err != nil {
			t.Fatalf("%v: %s", err, res.Body)
		}
		ids = append(ids, h.TaskID)
	}
	st, res, err := c.Listen(ctx, &mcp.SubscriptionFilter{TaskIDs: ids})
	if err != nil || st == nil {
		t.Fatalf("listen: %v %+v", err, res)
	}
	st.Next(ctx) // the acknowledgement
	secret := "secret-" + ids[0]
	m.Complete(ids[0], &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: secret}}}, "done")
	m.Fail(ids[1], &mcp.Error{Code: mcp.CodeInternalError, Message: "failed"}, "")
	m.MarkWorking(ids[2], "running")
	for range 3 {
		if _, err := st.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	srv.subs.mu.Lock()
	if len(srv.subs.byTask) != 1 || len(srv.subs.byTask[ids[2]]) != 1 {
		t.Errorf("followed tasks: %v", srv.subs.byTask)
	}
	var s *subscription
	for s = range srv.subs.byTask[ids[2]] {
	}
	srv.subs.mu.Unlock()
	srv.Close()
	for {
		if _, err := st.Next(ctx); err != nil {
			break
		}
	}
	<-st.Done() // the listen goroutine has returned: its state is quiet
	if !slices.Equal(keysOf(s.last), []string{ids[2]}) {
		t.Errorf("bodies kept for %q", keysOf(s.last))
	}
	for id, st := range s.last {
		if id != ids[2] || !json.Valid([]byte(st.body())) {
			t.Errorf("kept %s: %s", id, st.body())
		}
	}
	if got, want := keysOf(s.terminal), sorted(ids[0], ids[1]); !slices.Equal(got, want) {
		t.Errorf("terminal %q, want %q", got, want)
	}
	if strings.Contains(fmt.Sprint(s.last), secret) {
		t.Error("the completed result is retained")
	}
	if srv.subs.count() != 0 || len(srv.subs.byTask) != 0 || len(srv.subs.perTenant) != 0 {
		t.Errorf("registry after the end: %d, %v, %v", srv.subs.count(), srv.subs.byTask, srv.subs.perTenant)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}
