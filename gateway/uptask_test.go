package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/worker"
)

// taskUpstream is a taskwire node whose tools are durable task tools
// (2026-07-28 Tasks extension): the upstream offers tasks itself.
type taskUpstream struct {
	url string
	// held receives a tool's name when a call reached its HoldAt step;
	// release lets every held call finish.
	held    chan string
	release chan struct{}
	once    sync.Once
	// stopped receives the cause that ended a held call early.
	stopped chan error
	calls   map[string]*atomic.Int64
	mu      sync.Mutex // guards node
	node    *node.Node
}

// upstreamTools are the durable tools of a taskUpstream:
//   - slow.task, again.task: "step i of n" progress, holding after step
//     HoldAt until released;
//   - fail.task: a JSON-RPC error -32001, so the upstream task fails;
//   - flaky.task: fails its first call, then returns its call number.
var upstreamTools = []string{"slow.task", "again.task", "fail.task", "flaky.task"}

// newTaskUpstream starts a taskUpstream at addr ("127.0.0.1:0": any port)
// on the SQLite file db.
func newTaskUpstream(t *testing.T, addr, db string) *taskUpstream {
	t.Helper()
	u := &taskUpstream{held: make(chan string, 8), release: make(chan struct{}), stopped: make(chan error, 8), calls: map[string]*atomic.Int64{}}
	var tools durable.Set
	for _, name := range upstreamTools {
		n := &atomic.Int64{}
		u.calls[name] = n
		durable.Add(&tools, durable.Tool[BuildIn, BuildOut]{
			Tool:        &mcp.Tool{Name: name, Description: "A durable upstream tool."},
			Run:         u.run(name, n),
			TaskOptions: durable.TaskOptions{PollInterval: 50 * time.Millisecond},
		})
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	n, err := node.New(node.Config{
		Addr:          addr,
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: db}},
		Endpoint:      ep,
		Tools:         &tools,
		Workers:       4,
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	u.node, u.url = n, n.URL()
	t.Cleanup(func() {
		u.releaseAll()
		u.stop()
	})
	return u
}

func (u *taskUpstream) run(name string, n *atomic.Int64) func(context.Context, *worker.Job, BuildIn) (BuildOut, error) {
	return func(ctx context.Context, job *worker.Job, in BuildIn) (BuildOut, error) {
		call := int(n.Add(1))
		switch {
		case name == "fail.task":
			return BuildOut{}, mcp.NewError(-32001, "upstream refuses")
		case name == "flaky.task" && call == 1:
			return BuildOut{}, mcp.NewError(-32001, "try again")
		}
		for i := 1; i <= in.Steps; i++ {
			_ = job.ReportProgress(fmt.Sprintf("step %d of %d", i, in.Steps), float64(i), float64(in.Steps))
			if i == in.HoldAt {
				u.held <- name
				select {
				case <-u.release:
				case <-ctx.Done():
					u.stopped <- context.Cause(ctx)
					return BuildOut{}, context.Cause(ctx)
				}
			}
		}
		return BuildOut{Steps: in.Steps, Call: call}, nil
	}
}

func (u *taskUpstream) releaseAll() { u.once.Do(func() { close(u.release) }) }

func (u *taskUpstream) stop() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.node != nil {
		_ = u.node.Shutdown()
		u.node = nil
	}
}

func (u *taskUpstream) counts() map[string]int64 {
	out := map[string]int64{}
	for name, n := range u.calls {
		if v := n.Load(); v > 0 {
			out[name] = v
		}
	}
	return out
}

// awaitHeld waits until the named calls are held upstream.
func (u *taskUpstream) awaitHeld(t *testing.T, ctx context.Context, names ...string) {
	t.Helper()
	want := map[string]int{}
	for _, n := range names {
		want[n]++
	}
	for range names {
		select {
		case n := <-u.held:
			want[n]--
		case <-ctx.Done():
			t.Fatalf("the upstream was not called: still waiting for %v", want)
		}
	}
}

// gatewayNode is a gateway node on a given SQLite file, which a test stops
// and starts again to resume its jobs.
type gatewayNode struct {
	url  string
	once sync.Once
	n    *node.Node
	g    *gateway.Gateway
}

func startGatewayOn(t *testing.T, opts gateway.Options, db string) *gatewayNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	g, err := gateway.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
	var tools durable.Set
	if err := g.Register(ep, &tools); err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: db}},
		Endpoint:      ep,
		Tools:         &tools,
		Workers:       2,
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	gn := &gatewayNode{url: n.URL(), n: n, g: g}
	t.Cleanup(func() { gn.stop(t) })
	return gn
}

// stop shuts the node down (its runs are released) and closes the gateway.
func (gn *gatewayNode) stop(t *testing.T) {
	gn.once.Do(func() {
		if err := gn.n.Shutdown(); err != nil {
			t.Errorf("node Shutdown: %v", err)
		}
		if err := gn.g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
}

// awaitStatus polls the downstream task until its statusMessage is want.
func awaitStatus(t *testing.T, ctx context.Context, task *client.Task, want string) {
	t.Helper()
	for {
		d, err := task.Get(ctx)
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		if d.StatusMessage == want {
			return
		}
		if d.Status.Terminal() {
			t.Fatalf("the task ended (%s) before its status message was %q", d.Status, want)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("statusMessage %q, want %q", d.StatusMessage, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// callTask calls name on c and returns the task the gateway made of it.
func callTask(t *testing.T, ctx context.Context, c *client.Client, name string, in BuildIn) *client.Task {
	t.Helper()
	res, err := c.Call(ctx, name, in)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.Task == nil {
		t.Fatalf("%s answered inline: %+v", name, res.Result)
	}
	return res.Task
}

// TestUpstreamTaskResumedNotRepeated: the gateway runs a task tool as an
// upstream task, its statusMessage follows the upstream task's, and a
// gateway stopped while it follows the upstream task and started again on
// the same store follows the same upstream task to its result: each
// upstream tool is called once, for a retry tool and for another alike.
func TestUpstreamTaskResumedNotRepeated(t *testing.T) {
	dir := t.TempDir()
	up := newTaskUpstream(t, "127.0.0.1:0", filepath.Join(dir, "upstream.db"))
	opts := gateway.Options{Upstream: up.url, TaskTools: []string{"*.task"}, RetryTools: []string{"again.*"}}
	db := filepath.Join(dir, "gateway.db")
	first := startGatewayOn(t, opts, db)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c1 := newClient(t, first.url)
	ids := map[string]string{}
	for _, name := range []string{"slow.task", "again.task"} {
		task := callTask(t, ctx, c1, name, BuildIn{Steps: 2, HoldAt: 1})
		ids[name] = task.ID()
	}
	up.awaitHeld(t, ctx, "slow.task", "again.task")
	awaitStatus(t, ctx, c1.Task(ids["slow.task"]), "step 1 of 2")
	first.stop(t)

	second := startGatewayOn(t, opts, db)
	c2 := newClient(t, second.url)
	up.releaseAll()
	for name, id := range ids {
		out, err := c2.Task(id).Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(BuildOut{Steps: 2, Call: 1}, structured[BuildOut](t, out)); diff != "" {
			t.Errorf("%s result (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff(map[string]int64{"slow.task": 1, "again.task": 1}, up.counts()); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
	select {
	case err := <-up.stopped:
		t.Errorf("an upstream task was stopped: %v", err)
	default:
	}
}

// TestUpstreamTaskCancelled: cancelling the downstream task cancels the
// upstream task.
func TestUpstreamTaskCancelled(t *testing.T) {
	dir := t.TempDir()
	up := newTaskUpstream(t, "127.0.0.1:0", filepath.Join(dir, "upstream.db"))
	gw := startGatewayOn(t, gateway.Options{Upstream: up.url, TaskTools: []string{"*.task"}}, filepath.Join(dir, "gateway.db"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, gw.url)
	task := callTask(t, ctx, c, "slow.task", BuildIn{Steps: 2, HoldAt: 1})
	up.awaitHeld(t, ctx, "slow.task")
	if err := task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-up.stopped:
		if !errors.Is(err, worker.ErrCancelRequested) {
			t.Errorf("the upstream task stopped with %v, want a cancellation", err)
		}
	case <-ctx.Done():
		t.Fatal("the upstream task was not cancelled")
	}
	if _, err := task.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
		t.Errorf("downstream Wait: %v, want the task cancelled", err)
	}
}

// TestUpstreamTaskFailed: an upstream task that fails fails the downstream
// task with the upstream's error; for a retry tool the gateway calls
// again, and the second upstream task's result completes the task.
func TestUpstreamTaskFailed(t *testing.T) {
	dir := t.TempDir()
	up := newTaskUpstream(t, "127.0.0.1:0", filepath.Join(dir, "upstream.db"))
	gw := startGatewayOn(t, gateway.Options{
		Upstream: up.url, TaskTools: []string{"*.task"}, RetryTools: []string{"flaky.*"},
	}, filepath.Join(dir, "gateway.db"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, gw.url)

	_, err := callTask(t, ctx, c, "fail.task", BuildIn{}).Wait(ctx)
	var failed *client.TaskFailedError
	if !errors.As(err, &failed) || !strings.Contains(failed.Err.Message, "-32001") || !strings.Contains(failed.Err.Message, "upstream refuses") {
		t.Errorf("fail.task: %v, want the upstream's error -32001", err)
	}
	out, err := callTask(t, ctx, c, "flaky.task", BuildIn{Steps: 1}).Wait(ctx)
	if err != nil {
		t.Fatalf("flaky.task: %v", err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 1, Call: 2}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("flaky.task result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"fail.task": 1, "flaky.task": 2}, up.counts()); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
}

// TestUpstreamTaskLost: a gateway that resumes following an upstream task
// the upstream no longer knows (it restarted on an empty store) fails the
// task saying so, and calls the upstream no more, even for a retry tool.
func TestUpstreamTaskLost(t *testing.T) {
	dir := t.TempDir()
	up := newTaskUpstream(t, "127.0.0.1:0", filepath.Join(dir, "upstream.db"))
	addr := strings.TrimSuffix(strings.TrimPrefix(up.url, "http://"), "/mcp")
	opts := gateway.Options{Upstream: up.url, TaskTools: []string{"*.task"}, RetryTools: []string{"again.*"}}
	db := filepath.Join(dir, "gateway.db")
	first := startGatewayOn(t, opts, db)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c1 := newClient(t, first.url)
	task := callTask(t, ctx, c1, "again.task", BuildIn{Steps: 2, HoldAt: 1})
	up.awaitHeld(t, ctx, "again.task")
	awaitStatus(t, ctx, task, "step 1 of 2")
	first.stop(t)
	up.stop()

	fresh := newTaskUpstream(t, addr, filepath.Join(dir, "fresh.db"))
	second := startGatewayOn(t, opts, db)
	_, err := newClient(t, second.url).Task(task.ID()).Wait(ctx)
	var failed *client.TaskFailedError
	if !errors.As(err, &failed) || !strings.Contains(failed.Err.Message, "no longer knows the task") {
		t.Errorf("Wait: %v, want a failure saying the upstream no longer knows the task", err)
	}
	if got := fresh.counts(); len(got) != 0 {
		t.Errorf("the restarted upstream was called: %v", got)
	}
}
