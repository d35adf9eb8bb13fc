package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// TestPutTaskTool: a task tool added to a served endpoint is listed and
// requires tasks, as one registered before New; it is refused on an
// endpoint that serves no Tasks, twice, and in place of an inline tool;
// once removed it can be given a definition again (RedefineTool), not
// added again, nor replaced by an inline tool.
func TestPutTaskTool(t *testing.T) {
	st := openDefaultsStore(t, filepath.Join(t.TempDir(), "tasks.db"))
	build := func(ctx context.Context, _ *server.Request, _ ltIn, cc *task.CreationContext) (task.Handle, error) {
		tk, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{})
		if err != nil {
			return task.Handle{}, err
		}
		return task.Handle{ID: tk.ID()}, nil
	}
	late := &mcp.Tool{Name: "late", Description: "added"}

	plain := newLiveRig(t, server.EndpointOptions{DynamicTools: true}, nil, func(o *server.Options) { o.TaskManager = st })
	if err := plain.ep.UpdateTools(server.PutTaskTool[ltIn, ltOut](late, build)); err == nil || !strings.Contains(err.Error(), "does not serve Tasks") {
		t.Errorf("PutTaskTool on an endpoint without Tasks: %v", err)
	}

	r := newLiveRig(t, server.EndpointOptions{DynamicTools: true, TaskProtocolVersions: []string{mcp.LatestProtocolVersion}}, func(ep *server.Endpoint) {
		ep.AddRawTool(&mcp.Tool{Name: "inline", InputSchema: objectSchema}, textTool("inline"))
	}, func(o *server.Options) { o.TaskManager = st })
	if err := r.ep.UpdateTools(server.PutTaskTool[ltIn, ltOut](late, build, server.WithWaitInline())); err != nil {
		t.Fatal(err)
	}
	got, _ := listedNames(t, r.post(t, mcp.MethodToolsList, `{}`), "tools")
	if diff := cmp.Diff([]string{"inline", "late: added"}, got); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	// A call without the Tasks extension is refused, as for any
	// task-required tool.
	if res := r.post(t, mcp.MethodToolsCall, `{"name":"late","arguments":{}}`); errorCode(res) != -32021 {
		t.Errorf("a call without the Tasks extension: %s", res.Body)
	}
	for _, tc := range []struct {
		name   string
		change server.ToolChange
		want   string
	}{
		{"twice", server.PutTaskTool[ltIn, ltOut](late, build), `tool "late" is registered already`},
		{"over an inline tool", server.PutTaskTool[ltIn, ltOut](&mcp.Tool{Name: "inline"}, build), `tool "inline" is registered already`},
		{"an inline tool over it", server.PutRawTool(&mcp.Tool{Name: "late", InputSchema: objectSchema}, textTool("x")), "can create tasks"},
		{"no handler", server.PutTaskTool[ltIn, ltOut](&mcp.Tool{Name: "nil"}, nil), "a tool and a handler are required"},
	} {
		if err := r.ep.UpdateTools(tc.change); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := r.ep.UpdateTools(server.RemoveTool("late")); err != nil {
		t.Fatal(err)
	}
	if err := r.ep.UpdateTools(server.PutTaskTool[ltIn, ltOut](late, build)); err == nil || !strings.Contains(err.Error(), "redefine it") {
		t.Errorf("PutTaskTool of a removed task tool: %v", err)
	}
	if err := r.ep.UpdateTools(server.PutRawTool(&mcp.Tool{Name: "late", InputSchema: objectSchema}, textTool("x"))); err == nil {
		t.Error("an inline tool replaced a removed task tool")
	}
	back := *late
	back.Description = "back"
	back.InputSchema = objectSchema
	if err := r.ep.UpdateTools(server.RedefineTool(&back)); err != nil {
		t.Fatal(err)
	}
	got, _ = listedNames(t, r.post(t, mcp.MethodToolsList, `{}`), "tools")
	if diff := cmp.Diff([]string{"inline", "late: back"}, got); diff != "" {
		t.Errorf("tools/list after remove and redefine (-want +got):\n%s", diff)
	}
}
