package node

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

// TestSchedulesRun: a node's schedule creates a task of its tool for the
// schedule's principal, which that principal (only) reads to its result,
// and the node's CreateTask does the same from Go.
func TestSchedulesRun(t *testing.T) {
	cfg := testConfig(t)
	durable.Add(cfg.Tools, durable.Tool[BlockIn, BlockOut]{
		Tool: &mcp.Tool{Name: "work.echo"},
		Run:  func(_ context.Context, _ *worker.Job, in BlockIn) (BlockOut, error) { return BlockOut(in), nil },
	})
	svc := server.Identity{Principal: "svc", Tenant: "svc"}
	cfg.Schedules = []schedule.Schedule{{Name: "tick", Tool: "work.echo", Arguments: []byte(`{"label":"scheduled"}`),
		Identity: svc, Every: time.Second}}
	n := start(t, cfg)

	deadline := time.Now().Add(waitFor)
	var st schedule.Status
	for st = n.sched.Statuses()[0]; st.LastTaskID == ""; st = n.sched.Statuses()[0] {
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled task after %v: %+v", waitFor, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	direct, err := n.CreateTask(context.Background(), server.CreateTaskParams{Tool: "work.echo",
		Arguments: []byte(`{"label":"from go"}`), Identity: svc})
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}

	c := newClient(t, n.URL())
	c.Header = http.Header{"Authorization": {"Bearer svc"}}
	for id, label := range map[string]string{st.LastTaskID: "scheduled", direct.TaskID: "from go"} {
		got := awaitTask(t, c, id)
		if got.Status != mcp.TaskCompleted || !strings.Contains(string(got.Result), `"label":"`+label+`"`) {
			t.Errorf("task of %q: %s %s", label, got.Status, got.Result)
		}
	}
	other := newClient(t, n.URL())
	other.Header = http.Header{"Authorization": {"Bearer mallory"}}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if r, err := other.GetTask(ctx, st.LastTaskID); err != nil || r.Error == nil {
		t.Errorf("another principal read the scheduled task: %v %s", err, r.Body)
	}
}

// awaitTask polls tasks/get until the task ends.
func awaitTask(t *testing.T, c *mcptest.Client, id string) *mcp.GetTaskResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for {
		r, err := c.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Task()
		if err != nil {
			t.Fatalf("tasks/get: %v (%s)", err, r.Body)
		}
		if got.Status.Terminal() {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}
