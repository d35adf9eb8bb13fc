package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness runs a Runtime over the in-memory backend (store/memory) through a
// storeWrap, with recording metrics and a captured log. The backend and the
// runtime share one clock, which reads package time (inside a synctest
// bubble, the bubble's fake time) plus the skew jump added. Use it inside a
// synctest bubble, unless the test runs on the real clock throughout.
type harness struct {
	mem     *memory.Manager
	store   *storeWrap
	clock   *skewClock
	metrics *recMetrics
	logs    *syncBuffer
	rt      *Runtime
	cancel  context.CancelFunc
	done    chan error

	mu  sync.Mutex
	ids []string // every task enqueued, for checkLogsRedacted
}

// skewClock is package time's clock, moved forward by jump.
type skewClock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *skewClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}

func (c *skewClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skew += d
}

// noHints is the publisher of a store that publishes no hints: the runtime
// then relies on polling and heartbeats alone.
type noHints struct{}

func (noHints) Subscribe(func(string)) func() { return func() {} }
func (noHints) Publish(string)                {}

// newHarness builds a Runtime with opts, filling in the store, events,
// clock, metrics and logger. Pass Options.Events noHints{} for a store that
// publishes no hints.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	clock := &skewClock{}
	mem, err := memory.New(memory.Options{Now: clock.Now, TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{mem: mem, store: newStoreWrap(mem.Jobs(), clock.Now), clock: clock, metrics: newRecMetrics(),
		logs: &syncBuffer{}}
	opts.Store = h.store
	if opts.Events == nil {
		opts.Events = mem.EventPublisher()
	}
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	opts.Metrics = h.metrics
	opts.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Name == "" {
		opts.Name = "test-worker"
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.rt = rt
	return h
}

// newJobs returns the JobStore of an empty in-memory backend, for tests
// that only build a Runtime.
func newJobs(t *testing.T) backend.JobStore {
	t.Helper()
	mem, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return mem.Jobs()
}

// start runs Run in a goroutine.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.rt.Run(ctx) }()
}

// stop cancels Run's context and waits for it to return.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}

// testRequest is the request context the harness's tasks are bound to.
var testRequest = task.RequestContext{Endpoint: "main", Tenant: "tenant", Principal: "alice", ProtocolVersion: "2026-07-28"}

// enqueue creates a task and its available job and returns the task ID.
func (h *harness) enqueue(t testing.TB, origin task.Origin, maxAttempts int) string {
	t.Helper()
	tk, err := h.mem.Enqueue(context.Background(), &task.CreationContext{Request: testRequest, Origin: origin},
		backend.EnqueueOptions{MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	h.mu.Lock()
	h.ids = append(h.ids, tk.ID())
	h.mu.Unlock()
	return tk.ID()
}

// jobView is what a test reads of a task and its job.
type jobView struct {
	status  task.Status
	message string
	pending mcp.InputRequests
	result  *mcp.CallToolResult
	rpcErr  *mcp.Error

	state       memory.JobState
	attempt     int64
	failures    int
	interrupted int

	claimTimes []time.Time // of the runtime's claims
	reports    []report    // accepted progress writes
}

// job returns the task's and its job's state.
func (h *harness) job(t testing.TB, id string) jobView {
	t.Helper()
	tk, err := h.mem.Find(id)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	j, ok := h.mem.Job(id)
	if !ok {
		t.Fatalf("task %s has no job", id)
	}
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	return jobView{
		status: tk.Status(), message: tk.StatusMessage(), pending: tk.InputRequests(), result: tk.Result(), rpcErr: tk.Error(),
		state: j.State, attempt: j.Attempt, failures: j.Failures, interrupted: j.InterruptedRuns,
		claimTimes: slices.Clone(h.store.claimTimes[id]), reports: slices.Clone(h.store.reports[id]),
	}
}

// answer sends a client's response to the input request key, as tasks/update
// does.
func (h *harness) answer(t testing.TB, id, key, raw string) {
	t.Helper()
	rc := testRequest
	rc.TaskID = id
	if err := h.mem.UpdateTask(context.Background(), task.UpdateContext{RequestContext: rc,
		Responses: mcp.InputResponses{key: json.RawMessage(raw)}}); err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
}

// requestCancel records the client's cancel intent, as tasks/cancel does.
func (h *harness) requestCancel(t testing.TB, id string) {
	t.Helper()
	rc := testRequest
	rc.TaskID = id
	if err := h.mem.RequestCancel(context.Background(), rc); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
}

// claimElsewhere claims the task's job for another worker, with lease.
func (h *harness) claimElsewhere(t testing.TB, id string, lease time.Duration) {
	t.Helper()
	jobs, err := h.mem.Jobs().Claim(context.Background(), backend.ClaimParams{Worker: "elsewhere", Limit: 1, Lease: lease,
		Now: h.clock.Now()})
	if err != nil || len(jobs) != 1 || jobs[0].TaskID != id {
		t.Fatalf("claim elsewhere: %d jobs, %v; want the job of %s", len(jobs), err, id)
	}
}

// rescueElsewhere has another node's rescuer, whose clock runs one default
// lease ahead, take back the jobs whose lease then expired: the store ends
// their leases without this runtime's knowledge.
func (h *harness) rescueElsewhere(t testing.TB) {
	t.Helper()
	n, err := h.mem.Jobs().RescueExpired(context.Background(), backend.RescueParams{Now: h.clock.Now().Add(defaultLease),
		Limit: 10, MaxInterruptedRuns: DefaultMaxInterruptedRuns})
	if err != nil || n == 0 {
		t.Fatalf("rescue elsewhere: %d jobs, %v", n, err)
	}
}

// waitFor advances (fake) time in small steps until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Hour)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStatus waits until the task reaches status.
func (h *harness) waitStatus(t *testing.T, id string, status task.Status) jobView {
	t.Helper()
	waitFor(t, "status "+string(status), func() bool { return h.job(t, id).status == status })
	return h.job(t, id)
}

// checkLogsRedacted fails if the log shows a task ID or a secret.
func (h *harness) checkLogsRedacted(t *testing.T, secrets ...string) {
	t.Helper()
	logs := h.logs.String()
	h.mu.Lock()
	secrets = append(secrets, h.ids...)
	h.mu.Unlock()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("log contains %q:\n%s", s, logs)
		}
	}
}

func testOrigin(t testing.TB, tool, args, outputSchema string, inputKinds ...string) task.Origin {
	t.Helper()
	p := task.OriginParams{
		ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
		Tool: tool, Arguments: json.RawMessage(args), InputKinds: inputKinds,
	}
	if outputSchema != "" {
		p.OutputSchema = json.RawMessage(outputSchema)
	}
	o, err := task.NewOrigin(p)
	if err != nil {
		t.Fatalf("NewOrigin: %v", err)
	}
	return o
}

// recMetrics records every metric call.
type recMetrics struct {
	mu          sync.Mutex
	transitions map[string]int // "kind transition"
	failures    map[string]int // "kind category"
	maintenance map[Transition]int
	kinds       map[string]bool
	labels      []string       // every label value seen
	running     map[string]int // QueueRunning: jobs running by queue
	mostRunning map[string]int // the most running at once by queue
}

func newRecMetrics() *recMetrics {
	return &recMetrics{transitions: map[string]int{}, failures: map[string]int{}, maintenance: map[Transition]int{}, kinds: map[string]bool{},
		running: map[string]int{}, mostRunning: map[string]int{}}
}

func (m *recMetrics) QueueRunning(queue string, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running[queue] += delta
	m.mostRunning[queue] = max(m.mostRunning[queue], m.running[queue])
	m.labels = append(m.labels, queue)
}

func (m *recMetrics) JobTransition(kind string, tr Transition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.transitions[kind+" "+string(tr)]++
	m.kinds[kind] = true
	m.labels = append(m.labels, kind, string(tr))
}

func (m *recMetrics) JobFailure(kind string, c FailureCategory) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures[kind+" "+string(c)]++
	m.kinds[kind] = true
	m.labels = append(m.labels, kind, string(c))
}

func (m *recMetrics) HandlerDuration(kind string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kinds[kind] = true
	m.labels = append(m.labels, kind)
}

func (m *recMetrics) Maintenance(tr Transition, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maintenance[tr] += n
	m.labels = append(m.labels, string(tr))
}

func (m *recMetrics) transition(kind string, tr Transition) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.transitions[kind+" "+string(tr)]
}

func (m *recMetrics) failure(kind string, c FailureCategory) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failures[kind+" "+string(c)]
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
