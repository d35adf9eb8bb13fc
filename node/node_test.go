package node

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/worker"
	"github.com/taskwire/taskwire/worker/workertest"
)

// waitFor bounds every wait of these tests.
const waitFor = 30 * time.Second

// BlockIn is the input of work.block, whose run waits for its context.
type BlockIn struct {
	Label string `json:"label"`
}

// BlockOut is its output.
type BlockOut struct {
	Label string `json:"label"`
}

func blockTools() *durable.Set {
	var tools durable.Set
	durable.Add(&tools, durable.Tool[BlockIn, BlockOut]{
		Tool: &mcp.Tool{Name: "work.block"},
		Run: func(ctx context.Context, _ *worker.Job, in BlockIn) (BlockOut, error) {
			<-ctx.Done()
			return BlockOut{}, context.Cause(ctx)
		},
	})
	return &tools
}

// testConfig is an HTTP node with one worker on a new SQLite file.
func testConfig(t *testing.T) Config {
	return Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: filepath.Join(t.TempDir(), "tasks.db")}},
		Workers:       1,
		ShutdownGrace: 200 * time.Millisecond,
		PollInterval:  20 * time.Millisecond,
		Tools:         blockTools(),
	}
}

// start starts a node and shuts it down when the test ends.
func start(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return n
}

func newClient(t *testing.T, url string) *mcptest.Client {
	base, path, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := mcptest.NewClient(mcptest.Remote("http://"+base, &http.Client{Transport: tr, Timeout: waitFor}), "/"+path)
	c.DeclareTasks()
	return c
}

func createTask(t *testing.T, c *mcptest.Client, name string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	r, err := c.CallTool(ctx, name, args)
	if err != nil || r.Error != nil {
		t.Fatalf("tools/call %s: %v %+v", name, err, r)
	}
	h, err := r.TaskHandle()
	if err != nil || h.TaskID == "" {
		t.Fatalf("tools/call %s: no task: %v", name, err)
	}
	return h.TaskID
}

// TestStopNowStopsClaiming: StopNow alone, before Shutdown has cancelled
// the worker runtime, stops it: the running job is released once and not
// claimed again, and the runtime returns without waiting for the grace
// period.
func TestStopNowStopsClaiming(t *testing.T) {
	cfg := testConfig(t)
	cfg.ShutdownGrace = time.Hour // a drain that would outlast the test
	metrics := workertest.New()
	cfg.WorkerMetrics = metrics
	n := start(t, cfg)
	createTask(t, newClient(t, n.URL()), "work.block", BlockIn{Label: "stop"})
	metrics.Await(t, worker.TransitionClaimed, 1)

	n.StopNow()
	select {
	case <-n.rtDone:
	case <-time.After(waitFor):
		t.Fatalf("the worker runtime still runs after StopNow (transitions: %v)", metrics.Snapshot())
	}
	want := map[worker.Transition]int{worker.TransitionClaimed: 1, worker.TransitionReleased: 1}
	if diff := cmp.Diff(want, metrics.Snapshot()); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestNoTracingWithoutOTLPEndpoint checks that without an endpoint the
// node installs no tracing at all.
func TestNoTracingWithoutOTLPEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	n := start(t, testConfig(t))
	if n.trace != nil {
		t.Fatal("a node without an OTLP endpoint installed tracing")
	}
}

// TestNewReportsEveryProblem: New refuses a configuration with every
// problem named in one line.
func TestNewReportsEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, []string{"a node needs a store", "a node needs an HTTP address or at least one worker"}},
		{"several", Config{
			StoreSpec: StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: "x.db"}},
			Workers:   -1, Lease: time.Millisecond, MaxConns: -1, Addr: "192.0.2.1:80",
			Console: Console{Token: []byte("0123456789abcdef")},
		}, []string{"--workers must be between 0 and 1024", "--lease must be at least 1s", "--max-conns must not be negative",
			"--addr 192.0.2.1:80 is not a loopback address", "an operator token needs an admin address"}},
		{"negative max conns", Config{
			StoreSpec: StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: "x.db"}}, Workers: 1, MaxConns: -1,
		}, []string{"--max-conns must not be negative"}},
		{"schedules", Config{
			StoreSpec: StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: "x.db"}}, Workers: 1,
			Schedules: []schedule.Schedule{{Name: "a b", Tool: "t", Every: time.Hour}},
		}, []string{"schedules are run by an API node", `schedule "a b": the name may hold only`,
			`schedule "a b": an Identity with a Principal is required`}},
		{"stdio with an address", Config{
			StoreSpec: StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: "x.db"}},
			Addr:      "127.0.0.1:0", Stdio: &Stdio{},
		}, []string{"a stdio node has no HTTP address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil {
				t.Fatal("New accepted the configuration")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if strings.Contains(err.Error(), "must not exceed") {
				t.Errorf("error %q derives a second problem from the first", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestGivenStoreIsClosed: a store handed over open is the node's: Run
// closes it when the node stops, and a node that fails to start closes
// it too.
func TestGivenStoreIsClosed(t *testing.T) {
	ctx := context.Background()
	open := func() *closeCounter {
		st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "tasks.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return &closeCounter{Store: st}
	}
	st := open()
	cfg := testConfig(t)
	cfg.StoreSpec, cfg.Store = StoreSpec{}, st
	started := &firstWrite{done: make(chan struct{})}
	cfg.Messages = started
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- n.Run(runCtx) }()
	select {
	case <-started.done:
	case <-time.After(waitFor):
		t.Fatal("Run wrote no start-up line")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st.closed() != 1 {
		t.Errorf("the store was closed %d times by Run, want once", st.closed())
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	st = open()
	cfg.Store, cfg.Addr = st, taken.Addr().String()
	if n, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err == nil || !strings.Contains(err.Error(), "the port is taken") {
		t.Fatalf("Start on a taken port = %v", err)
	}
	if st.closed() != 1 {
		t.Errorf("the store was closed %d times after a failed start, want once", st.closed())
	}
}

// closeCounter is a store that counts its Close calls.
type closeCounter struct {
	backend.Store
	mu sync.Mutex
	n  int
}

func (c *closeCounter) Close() error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Store.Close()
}

func (c *closeCounter) closed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// firstWrite closes done at its first write.
type firstWrite struct {
	once sync.Once
	done chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.done) })
	return len(p), nil
}
