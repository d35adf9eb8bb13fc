package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoTasksClient drives `taskwire serve` with the mcp-go v1.2.1
// client pinned to 2025-11-25 and declaring the experimental tasks of that
// revision (tasks.requests.tools.call), as VS Code does: the durable tools
// are task-required, a call with params.task creates the task, tasks/get
// and tasks/list see it, and tasks/result delivers the result, the approval
// form arriving as a real elicitation request on that stream.
//
// mcp-go's CallTool cannot decode a CreateTaskResult (it has no content),
// so the task-augmented call goes through the client's transport, also
// public API; everything else uses the client's own methods.
func TestMCPGoTasksClient(t *testing.T) {
	const version = "2025-11-25"
	p := startServe(t)
	rec := &elicitRecorder{}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	trans, err := transport.NewStreamableHTTP(p.URL, transport.WithHTTPBasicClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpgo.NewClient(trans,
		mcpgo.WithProtocolVersion(version),
		mcpgo.WithElicitationHandler(mcpGoElicitor{rec}),
		mcpgo.WithClientCapabilities(mcp.ClientCapabilities{Tasks: &mcp.TasksCapability{
			List:   &struct{}{},
			Cancel: &struct{}{},
			Requests: &mcp.TaskRequestsCapability{Tools: &struct {
				Call *struct{} `json:"call,omitempty"`
			}{Call: &struct{}{}}},
		}}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer c.Close()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "interop-mcpgo-tasks", Version: "1.0.0"},
	}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}

	t.Run("initialize", func(t *testing.T) {
		tasks := init.Capabilities.Tasks
		if tasks == nil || tasks.Requests == nil || tasks.Requests.Tools == nil || tasks.Requests.Tools.Call == nil {
			t.Errorf("capabilities.tasks = %s, want requests.tools.call", marshal(t, tasks))
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		got := map[string]mcp.TaskSupport{}
		for _, tool := range res.Tools {
			if tool.Execution != nil {
				got[tool.Name] = tool.Execution.TaskSupport
			}
		}
		for _, name := range []string{toolReports, toolApprovals} {
			if got[name] != mcp.TaskSupportRequired {
				t.Errorf("%s: execution.taskSupport %q, want required", name, got[name])
			}
		}
	})

	var reportTask string
	t.Run(toolReports, func(t *testing.T) {
		account := "mcpgo-tasks"
		reportTask = mcpGoCreateTask(t, ctx, trans, "create-report", toolReports, reportArgs(account))
		res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: reportTask}})
		if err != nil {
			t.Fatalf("tasks/result: %v", err)
		}
		if res.IsError || res.StructuredContent == nil {
			t.Fatalf("tasks/result: %s", marshal(t, res))
		}
		checkReport(t, p.Dir, account, marshal(t, res.StructuredContent))
		got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: reportTask}})
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		if got.Status != mcp.TaskStatusCompleted {
			t.Errorf("tasks/get: status %q, want completed", got.Status)
		}
	})

	t.Run(toolApprovals, func(t *testing.T) {
		id := mcpGoCreateTask(t, ctx, trans, "create-approval", toolApprovals, approvalArgs)
		res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
		if err != nil {
			t.Fatalf("tasks/result: %v", err)
		}
		if res.IsError || res.StructuredContent == nil {
			t.Fatalf("tasks/result: %s", marshal(t, res))
		}
		checkApproval(t, marshal(t, res.StructuredContent))
		if d := cmp.Diff([]elicitation{wantElicitation}, rec.take()); d != "" {
			t.Errorf("elicitation requests (-want +got):\n%s", d)
		}
	})

	t.Run("tasks/list", func(t *testing.T) {
		if reportTask == "" {
			t.Skip("no task was created")
		}
		res, err := c.ListTasks(ctx, mcp.ListTasksRequest{})
		if err != nil {
			t.Fatalf("tasks/list: %v", err)
		}
		var ids []string
		for _, task := range res.Tasks {
			ids = append(ids, task.TaskId)
		}
		if !slices.Contains(ids, reportTask) {
			t.Errorf("tasks/list lacks the report task: %d tasks", len(ids))
		}
	})
	checkNoLeaks(t, p, c.GetSessionId(), reportTask)
}

// mcpGoCreateTask sends a task-augmented tools/call through the client's
// transport and returns the created task's ID.
func mcpGoCreateTask(t *testing.T, ctx context.Context, trans transport.Interface, id, name string, args any) string {
	t.Helper()
	resp, err := trans.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Method:  string(mcp.MethodToolsCall),
		Params: mcp.CallToolParams{
			Name: name, Arguments: args, Task: &mcp.TaskParams{},
		},
	})
	if err != nil {
		t.Fatalf("tools/call %s with params.task: %v", name, err)
	}
	if resp.Error != nil {
		t.Fatalf("tools/call %s with params.task: %s", name, marshal(t, resp.Error))
	}
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil {
		t.Fatalf("decode CreateTaskResult %s: %v", resp.Result, err)
	}
	if created.Task.TaskId == "" {
		t.Fatalf("tools/call %s with params.task: no task in %s", name, resp.Result)
	}
	return created.Task.TaskId
}
