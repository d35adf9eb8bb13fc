package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness runs a Runtime over a fakeStore, with recording metrics and a
// captured log. Use it inside a synctest bubble.
type harness struct {
	store   *fakeStore
	events  *task.Broadcaster
	metrics *recMetrics
	logs    *syncBuffer
	rt      *Runtime
	cancel  context.CancelFunc
	done    chan error
}

// newHarness builds a Runtime with opts, filling in the store, events,
// metrics and logger. Set h.store.events to nil before start for a store
// that publishes no hints.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	events := task.NewBroadcaster()
	h := &harness{events: events, store: newFakeStore(events), metrics: newRecMetrics(), logs: &syncBuffer{}}
	opts.Store = h.store
	if opts.Events == nil {
		opts.Events = events
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
func (h *harness) waitStatus(t *testing.T, id string, status task.Status) fakeJob {
	t.Helper()
	waitFor(t, "status "+string(status), func() bool { return h.store.job(id).status == status })
	return h.store.job(id)
}

// checkLogsRedacted fails if the log shows a task ID or a secret.
func (h *harness) checkLogsRedacted(t *testing.T, secrets ...string) {
	t.Helper()
	logs := h.logs.String()
	for _, s := range append(secrets, "task-0") {
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
	labels      []string // every label value seen
}

func newRecMetrics() *recMetrics {
	return &recMetrics{transitions: map[string]int{}, failures: map[string]int{}, maintenance: map[Transition]int{}, kinds: map[string]bool{}}
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
