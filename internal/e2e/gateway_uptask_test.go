package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/worker"
)

// taskUpstream is a taskwire node in this process whose tools once.task
// and again.task are durable task tools (the upstream offers tasks): each
// call is held until release, then answers its call number.
type taskUpstream struct {
	url     string
	held    chan string
	release chan struct{}
	once    sync.Once
	calls   map[string]*atomic.Int64
}

func newTaskUpstream(t *testing.T) *taskUpstream {
	t.Helper()
	u := &taskUpstream{held: make(chan string, 4), release: make(chan struct{}), calls: map[string]*atomic.Int64{}}
	var tools durable.Set
	for _, name := range []string{"once.task", "again.task"} {
		n := &atomic.Int64{}
		u.calls[name] = n
		durable.Add(&tools, durable.Tool[struct{}, buildCall]{
			Tool: &mcp.Tool{Name: name},
			Run: func(ctx context.Context, job *worker.Job, _ struct{}) (buildCall, error) {
				call := n.Add(1)
				_ = job.ReportStatus("started")
				u.held <- name
				select {
				case <-u.release:
				case <-ctx.Done():
					return buildCall{}, context.Cause(ctx)
				}
				return buildCall{Call: call}, nil
			},
			TaskOptions: durable.TaskOptions{PollInterval: 100 * time.Millisecond},
		})
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	n, err := node.New(node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: filepath.Join(t.TempDir(), "upstream.db")}},
		Endpoint:      ep,
		Tools:         &tools,
		Workers:       4,
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		u.releaseAll()
		if err := n.Shutdown(); err != nil {
			t.Errorf("upstream Shutdown: %v", err)
		}
	})
	u.url = n.URL()
	return u
}

func (u *taskUpstream) releaseAll() { u.once.Do(func() { close(u.release) }) }

// TestGatewayUpstreamTaskCrash SIGKILLs `taskwire gateway` (SQLite) while
// its workers follow two upstream tasks, and restarts it on the same file.
// The restarted gateway follows the same upstream tasks to their results:
// each upstream tool was called exactly once, the retry tool and the
// other alike.
func TestGatewayUpstreamTaskCrash(t *testing.T) {
	up := newTaskUpstream(t)
	db := filepath.Join(t.TempDir(), "gateway.db")
	args := []string{"gateway", "--upstream", up.url, "--task-tools", "*.task", "--retry-tools", "again.*",
		"--addr", "127.0.0.1:0", "--store", "sqlite:" + db, "--workers", "2", "--lease", "1s",
		"--log-level", "warn", "--shutdown-grace", "1s"}
	first := launchProc(t, "gateway#1", args...)
	first.awaitServing()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	token := func(context.Context) (string, error) { return "alice", nil }
	c1, err := mcpclient.New(first.url, mcpclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	ids := map[string]string{}
	for _, name := range []string{"once.task", "again.task"} {
		res, err := c1.Call(ctx, name, nil)
		if err != nil || res.Task == nil {
			t.Fatalf("%s: %+v %v, want a task", name, res, err)
		}
		ids[name] = res.Task.ID()
	}
	for range 2 {
		select {
		case <-up.held:
		case <-ctx.Done():
			t.Fatalf("the upstream was not called:\n%s", first.output())
		}
	}
	// The gateway follows both upstream tasks once their status reaches
	// the downstream tasks.
	for name, id := range ids {
		poll(t, startTimeout, 50*time.Millisecond, func() string { return name + " status" }, func() bool {
			d, err := c1.Task(id).Get(ctx)
			return err == nil && d.StatusMessage == "started"
		})
	}
	first.kill()

	second := launchProc(t, "gateway#2", args...)
	second.awaitServing()
	c2, err := mcpclient.New(second.url, mcpclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	up.releaseAll()
	for name, id := range ids {
		out, err := c2.Task(id).Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, second.output())
		}
		if diff := cmp.Diff(`{"call":1}`, string(out.StructuredContent)); diff != "" {
			t.Errorf("%s result (-want +got):\n%s", name, diff)
		}
	}
	got := map[string]int64{}
	for name, n := range up.calls {
		got[name] = n.Load()
	}
	if diff := cmp.Diff(map[string]int64{"once.task": 1, "again.task": 1}, got); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
}

// TestGatewayStdioUpstreamTaskCrash SIGKILLs `taskwire gateway` while a
// worker follows an upstream task of the `taskwire serve --stdio` process
// it started (--upstream-cmd, 2025-11-25 tasks over stdio, the upstream's
// store a SQLite file of its own), and restarts it on the same files. The
// restarted gateway starts a new upstream process, which knows the task,
// and follows it to its result: the upstream ran one task (one report
// file), though the tool is a retry tool.
func TestGatewayStdioUpstreamTaskCrash(t *testing.T) {
	dir := t.TempDir()
	reports := filepath.Join(dir, "reports")
	upstream := strings.Join([]string{taskwireBinary(t), "serve", "--stdio", "--store", "sqlite:" + filepath.Join(dir, "upstream.db"),
		"--workers", "2", "--lease", "1s", "--reports-dir", reports, "--log-level", "warn"}, " ")
	args := []string{"gateway", "--upstream-cmd", upstream, "--task-tools", "reports.*", "--retry-tools", "reports.*",
		"--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(dir, "gateway.db"), "--workers", "2", "--lease", "1s",
		"--log-level", "warn", "--shutdown-grace", "1s"}
	first := launchProc(t, "gateway#1", args...)
	first.awaitServing()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	token := func(context.Context) (string, error) { return "alice", nil }
	c1, err := mcpclient.New(first.url, mcpclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	res, err := c1.Call(ctx, "reports.generate", map[string]any{"accountId": "acme", "rows": 4, "seconds": 4})
	if err != nil || res.Task == nil {
		t.Fatalf("reports.generate: %+v %v, want a task", res, err)
	}
	// The upstream task's progress reaches the downstream task: the
	// gateway recorded the upstream task and follows it.
	poll(t, startTimeout, 50*time.Millisecond, func() string { return "the upstream task's progress\n" + first.output() }, func() bool {
		d, err := res.Task.Get(ctx)
		return err == nil && strings.HasPrefix(d.StatusMessage, "row ")
	})
	first.kill()

	second := launchProc(t, "gateway#2", args...)
	second.awaitServing()
	c2, err := mcpclient.New(second.url, mcpclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	out, err := c2.Task(res.Task.ID()).Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v\n%s", err, second.output())
	}
	var report struct {
		AccountID string `json:"accountId"`
		Rows      int    `json:"rows"`
	}
	if err := json.Unmarshal(out.StructuredContent, &report); err != nil || report.AccountID != "acme" || report.Rows != 4 {
		t.Errorf("result %s (%v), want the report of acme's 4 rows", out.StructuredContent, err)
	}
	files, err := os.ReadDir(reports)
	if err != nil || len(files) != 1 {
		t.Errorf("the upstream wrote %d report files (%v), want 1: one upstream task", len(files), err)
	}
}
