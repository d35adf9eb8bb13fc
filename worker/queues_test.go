package worker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// enqueueIn creates a task of kind in queue with priority.
func (h *harness) enqueueIn(t testing.TB, kind, queue string, priority int) string {
	t.Helper()
	tk, err := h.mem.Enqueue(context.Background(), &task.CreationContext{Request: testRequest,
		Origin: testOrigin(t, kind, `{}`, sumSchema)}, backend.EnqueueOptions{Queue: queue, Priority: priority})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return tk.ID()
}

// gatedHandler blocks every run until release, and records the most runs
// of each kind at once.
type gatedHandler struct {
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	order   []string // the kinds in the order their runs started
	release chan struct{}
}

func newGatedHandler() *gatedHandler {
	return &gatedHandler{running: map[string]int{}, most: map[string]int{}, release: make(chan struct{})}
}

func (g *gatedHandler) handle(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
	kind := job.Kind()
	g.mu.Lock()
	g.running[kind]++
	g.most[kind] = max(g.most[kind], g.running[kind])
	g.order = append(g.order, kind)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running[kind]--
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":1}`)}, nil
}

func (g *gatedHandler) snapshot() (running, most map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return clone(g.running), clone(g.most)
}

func clone(m map[string]int) map[string]int {
	c := map[string]int{}
	for k, v := range m {
		if v != 0 {
			c[k] = v
		}
	}
	return c
}

// TestQueuesBoundTheirWorkers: each served queue runs at most its
// MaxWorkers handlers at once, a queue that is full does not hold back
// another, and the jobs of a queue the runtime does not serve are never
// claimed.
// Both with a store that claims one queue at a time and with one that
// claims several at once (backend.QueuesClaimer).
func TestQueuesBoundTheirWorkers(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(claimMode(multi), func(t *testing.T) { testQueuesBoundTheirWorkers(t, multi) })
	}
}

// claimMode names a test's claim mode.
func claimMode(multi bool) string {
	if multi {
		return "ClaimQueues"
	}
	return "Claim"
}

func testQueuesBoundTheirWorkers(t *testing.T, multi bool) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Queues: map[string]QueueConfig{"mail": {MaxWorkers: 1}, "reports": {MaxWorkers: 2}},
			PollInterval: time.Second})
		if multi {
			h.claimQueuesToo(t)
		}
		g := newGatedHandler()
		for kind, queue := range map[string]string{"send": "mail", "build": "reports", "other": "unserved"} {
			if err := h.rt.AddRawHandler(kind, g.handle, WithQueue(queue)); err != nil {
				t.Fatal(err)
			}
		}
		var ids []string
		for range 3 {
			ids = append(ids, h.enqueueIn(t, "send", "mail", 0), h.enqueueIn(t, "build", "reports", 0))
		}
		unserved := h.enqueueIn(t, "other", "unserved", 0)
		h.start()
		synctest.Wait()
		running, _ := g.snapshot()
		if d := cmp.Diff(map[string]int{"send": 1, "build": 2}, running); d != "" {
			t.Errorf("running at first (-want +got):\n%s", d)
		}
		for range 6 {
			g.release <- struct{}{}
			synctest.Wait()
		}
		time.Sleep(5 * time.Second) // polls of every queue
		synctest.Wait()
		for _, id := range ids {
			if s := h.job(t, id).status; s != task.Completed {
				t.Errorf("a served job is %s", s)
			}
		}
		if s := h.job(t, unserved).status; s != task.Working || h.job(t, unserved).attempt != 0 {
			t.Errorf("the job of the unserved queue is %s at attempt %d; want working, never claimed", s, h.job(t, unserved).attempt)
		}
		_, most := g.snapshot()
		if d := cmp.Diff(map[string]int{"send": 1, "build": 2}, most); d != "" {
			t.Errorf("most running at once (-want +got):\n%s", d)
		}
		h.stop(t)
		for _, c := range h.store.claimLog() {
			if c.Queue != "mail" && c.Queue != "reports" {
				t.Errorf("a claim of queue %q", c.Queue)
			}
		}
		h.metrics.mu.Lock()
		defer h.metrics.mu.Unlock()
		if d := cmp.Diff(map[string]int{"mail": 1, "reports": 2}, h.metrics.mostRunning); d != "" {
			t.Errorf("most running by queue, as the metrics saw it (-want +got):\n%s", d)
		}
		if d := cmp.Diff(map[string]int{"mail": 0, "reports": 0}, h.metrics.running); d != "" {
			t.Errorf("running by queue at the end (-want +got):\n%s", d)
		}
	})
}

// TestQueuesDefault: without Options.Queues the runtime serves every
// queue its handlers name, and claims the jobs of each with its kinds
// only; a priority orders the jobs within a queue. Both claim modes.
func TestQueuesDefault(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(claimMode(multi), func(t *testing.T) { testQueuesDefault(t, multi) })
	}
}

func testQueuesDefault(t *testing.T, multi bool) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Concurrency: 1, PollInterval: time.Second})
		if multi {
			h.claimQueuesToo(t)
		}
		g := newGatedHandler()
		if err := h.rt.AddRawHandler("low", g.handle); err != nil {
			t.Fatal(err)
		}
		if err := h.rt.AddRawHandler("urgent", g.handle); err != nil {
			t.Fatal(err)
		}
		if err := h.rt.AddRawHandler("mail", g.handle, WithQueue("mail")); err != nil {
			t.Fatal(err)
		}
		h.enqueueIn(t, "low", "", backend.LowestPriority)
		time.Sleep(time.Millisecond)
		h.enqueueIn(t, "urgent", "", backend.HighestPriority)
		h.start()
		for range 2 {
			synctest.Wait()
			g.release <- struct{}{}
		}
		synctest.Wait()
		h.stop(t)
		g.mu.Lock()
		order := g.order
		g.mu.Unlock()
		if d := cmp.Diff([]string{"urgent", "low"}, order); d != "" {
			t.Errorf("run order (-want +got):\n%s", d)
		}
		got := map[string][]string{}
		for _, c := range h.store.claimLog() {
			got[c.Queue] = c.Kinds
		}
		if d := cmp.Diff(map[string][]string{"default": {"low", "urgent"}, "mail": {"mail"}}, got); d != "" {
			t.Errorf("kinds claimed by queue (-want +got):\n%s", d)
		}
	})
}

// TestQueuesOptions: New and Run refuse queue configurations that cannot
// work, one line per problem.
func TestQueuesOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		queues      map[string]QueueConfig
		concurrency int
		handlers    map[string]string // kind → queue
		want        string            // "" for success
	}{
		{"served", map[string]QueueConfig{"a": {MaxWorkers: 2}}, 0, map[string]string{"k": "a"}, ""},
		{"empty", map[string]QueueConfig{}, 0, nil, "Options.Queues is empty"},
		{"bad name", map[string]QueueConfig{"a b": {MaxWorkers: 1}}, 0, nil, `Options.Queues: "a b": a queue name must hold only`},
		{"no workers", map[string]QueueConfig{"a": {}}, 0, nil, `Options.Queues["a"].MaxWorkers must be at least 1`},
		{"over concurrency", map[string]QueueConfig{"a": {MaxWorkers: 3}}, 2, nil, `Options.Queues["a"].MaxWorkers (3) exceeds Concurrency (2)`},
		{"two problems", map[string]QueueConfig{"a": {}, "b": {MaxWorkers: -1}}, 0, nil,
			"worker: Options.Queues[\"a\"].MaxWorkers must be at least 1\nworker: Options.Queues[\"b\"].MaxWorkers must be at least 1"},
		{"too many", manyQueues(MaxQueues + 1), 0, nil, "names 33 queues; at most 32"},
		{"queue without handler", map[string]QueueConfig{"a": {MaxWorkers: 1}, "b": {MaxWorkers: 1}}, 0,
			map[string]string{"k": "a"}, `Options.Queues names queues no handler uses: "b" (handlers use "a")`},
		{"bad handler queue", nil, 0, map[string]string{"k": "-x"}, "WithQueue: a queue name must hold only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runQueues(t, tc.queues, tc.concurrency, tc.handlers)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v; want success", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v; want an error holding %q", err, tc.want)
			}
		})
	}
}

// runQueues builds a runtime with queues and handlers and runs it for an
// instant, returning the first error of New, a registration or Run.
func runQueues(t *testing.T, queues map[string]QueueConfig, concurrency int, handlers map[string]string) error {
	rt, err := New(Options{Store: newJobs(t), Queues: queues, Concurrency: concurrency})
	if err != nil {
		return err
	}
	for kind, queue := range handlers {
		if err := rt.AddRawHandler(kind, func(context.Context, *Job) (*mcp.CallToolResult, error) { return nil, nil },
			WithQueue(queue)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return rt.Run(ctx)
}

func manyQueues(n int) map[string]QueueConfig {
	qs := map[string]QueueConfig{}
	for i := range n {
		qs["q"+strings.Repeat("x", i)] = QueueConfig{MaxWorkers: 1}
	}
	return qs
}

// TestQueuesConcurrencyDefault: with Options.Queues set and no
// Concurrency, the runtime's bound is the sum of the queues' MaxWorkers.
func TestQueuesConcurrencyDefault(t *testing.T) {
	rt, err := New(Options{Store: newJobs(t), Queues: map[string]QueueConfig{"a": {MaxWorkers: 3}, "b": {MaxWorkers: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cap(rt.slots); got != 7 {
		t.Errorf("Concurrency = %d, want 7", got)
	}
}

// TestQueuesClaimTogether: with a store that claims several queues at
// once, the queues wanting jobs share one ClaimQueues call, each asking
// for its own free slots, their sum within the runtime's free slots; a
// slot freed in one queue alone is claimed with a Claim of that queue;
// no queue runs more than its MaxWorkers.
func TestQueuesClaimTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Concurrency: 3, PollInterval: time.Hour,
			Queues: map[string]QueueConfig{"a": {MaxWorkers: 2}, "b": {MaxWorkers: 2}, "c": {MaxWorkers: 1}}})
		w := h.claimQueuesToo(t)
		g := newGatedHandler()
		for _, q := range []string{"a", "b", "c"} {
			if err := h.rt.AddRawHandler("k-"+q, g.handle, WithQueue(q)); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				h.enqueueIn(t, "k-"+q, q, 0)
			}
		}
		h.start()
		synctest.Wait()
		// The runtime's 3 slots, given out in the queues' order.
		want := [][]backend.QueueClaim{{{Queue: "a", Kinds: []string{"k-a"}, Limit: 2}, {Queue: "b", Kinds: []string{"k-b"}, Limit: 1}}}
		if d := cmp.Diff(want, w.queueClaimLog()); d != "" {
			t.Errorf("the first ClaimQueues calls (-want +got):\n%s", d)
		}
		running, _ := g.snapshot()
		if d := cmp.Diff(map[string]int{"k-a": 2, "k-b": 1}, running); d != "" {
			t.Errorf("running at first (-want +got):\n%s", d)
		}
		claims := len(w.claimLog())
		g.release <- struct{}{} // one job of a or b ends: its queue alone claims
		synctest.Wait()
		log := w.claimLog()[claims:]
		if len(log) == 0 || len(w.queueClaimLog()) != 1 {
			t.Errorf("after one slot freed: claims %v, %d ClaimQueues calls; want one Claim", log, len(w.queueClaimLog()))
		}
		for range 8 {
			g.release <- struct{}{}
			synctest.Wait()
		}
		h.stop(t)
		_, most := g.snapshot()
		if d := cmp.Diff(map[string]int{"k-a": 2, "k-b": 2, "k-c": 1}, most); d != "" {
			t.Errorf("most running at once (-want +got):\n%s", d)
		}
		for _, qs := range w.queueClaimLog() {
			sum := 0
			for _, q := range qs {
				sum += q.Limit
			}
			if len(qs) < 2 || sum > 3 {
				t.Errorf("a ClaimQueues call of %v; want two or more queues within 3 slots", qs)
			}
		}
	})
}
