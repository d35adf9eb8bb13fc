package mcptest_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

type reportIn struct {
	Account string `json:"account"`
}

type reportOut struct {
	Rows int `json:"rows"`
}

// buildReports is the application's server factory, taking the manager so
// that a test can substitute its own.
func buildReports(m task.Manager) (http.Handler, error) {
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "reports", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	server.AddTaskTool[reportIn, reportOut](ep, &mcp.Tool{Name: "report", Description: "Builds a report."},
		func(_ context.Context, _ *server.Request, _ reportIn, cc *task.CreationContext) (task.Handle, error) {
			t, err := m.(*memory.Manager).Create(cc)
			return task.Handle{ID: t.ID()}, err
		})
	return server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: m})
}

func TestSimulatorTaskLifecycle(t *testing.T) {
	m, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := mcptest.NewSimulator(buildReports, m, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := sim.CallTool(ctx, "report", map[string]any{"account": "a-1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := res.TaskHandle()
	if err != nil {
		t.Fatalf("%v: %s", err, res.Body)
	}
	if h.Status != task.Working {
		t.Fatalf("status %q, want working", h.Status)
	}
	// Move application state between requests, as a worker would.
	if _, err := m.Complete(h.TaskID, &mcp.CallToolResult{StructuredContent: []byte(`{"rows":3}`)}, "done"); err != nil {
		t.Fatal(err)
	}
	res, err = sim.GetTask(ctx, h.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := res.Task()
	if err != nil {
		t.Fatalf("%v: %s", err, res.Body)
	}
	if got.Status != task.Completed {
		t.Fatalf("status %q, want completed", got.Status)
	}
	if diff := cmp.Diff(`{"resultType":"complete","content":[{"type":"text","text":"{\"rows\":3}"}],"structuredContent":{"rows":3}}`, string(got.Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	res, err = sim.CancelTask(ctx, h.TaskID)
	if err != nil || res.Error != nil {
		t.Fatalf("cancel: %v %v", err, res.Error)
	}
}
