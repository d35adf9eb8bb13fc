package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

func legacyTestOrigin(t *testing.T) task.Origin {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: mcp.ProtocolVersion20251125, Endpoint: "e", Operation: mcp.MethodToolsCall,
		Tool: "build", Arguments: json.RawMessage(`{}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func ptrTo[T any](v T) *T { return &v }

// TestLegacyTaskConversion: the 2025-11-25 rendering of every kind of
// snapshot: same spellings and times, ttl null when unlimited, and a tool
// error ends the task as failed with a status message.
func TestLegacyTaskConversion(t *testing.T) {
	created := time.Date(2025, 11, 25, 10, 30, 0, 0, time.UTC)
	base := task.Params{
		ID: "t1", Origin: legacyTestOrigin(t), CreatedAt: created, LastUpdatedAt: created.Add(1500 * time.Millisecond),
		TTL: time.Hour, PollInterval: 2 * time.Second,
	}
	with := func(f func(p *task.Params)) task.Task {
		p := base
		f(&p)
		tk, err := task.New(p)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	want := func(status mcp.TaskStatus, msg string) mcp.LegacyTask {
		return mcp.LegacyTask{
			TaskID: "t1", Status: status, StatusMessage: msg,
			CreatedAt: "2025-11-25T10:30:00.000Z", LastUpdatedAt: "2025-11-25T10:30:01.500Z",
			TTL: ptrTo(int64(3_600_000)), PollInterval: ptrTo(int64(2000)),
		}
	}
	tests := []struct {
		name string
		in   task.Task
		want mcp.LegacyTask
	}{
		{"working", with(func(p *task.Params) { p.Status = task.Working; p.StatusMessage = "queued" }), want(mcp.TaskWorking, "queued")},
		{"input required", with(func(p *task.Params) {
			p.Status = task.InputRequired
			p.InputRequests = mcp.InputRequests{"k": mcp.NewElicitFormRequest("ok?", json.RawMessage(`{"type":"object","properties":{}}`))}
		}), want(mcp.TaskInputRequired, "")},
		{"completed", with(func(p *task.Params) { p.Status = task.Completed; p.Result = &mcp.CallToolResult{} }), want(mcp.TaskCompleted, "")},
		{"tool error is failed", with(func(p *task.Params) {
			p.Status = task.Completed
			p.Result = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "secret detail"}}}
		}), want(mcp.TaskFailed, legacyToolErrorMessage)},
		{"tool error keeps the worker's message", with(func(p *task.Params) {
			p.Status = task.Completed
			p.StatusMessage = "quota exceeded"
			p.Result = &mcp.CallToolResult{IsError: true}
		}), want(mcp.TaskFailed, "quota exceeded")},
		{"protocol failure", with(func(p *task.Params) { p.Status = task.Failed; p.Error = mcp.NewError(-32603, "upstream down") }), want(mcp.TaskFailed, "upstream down")},
		{"cancelled", with(func(p *task.Params) { p.Status = task.Cancelled }), want(mcp.TaskCancelled, "")},
		{"unlimited", with(func(p *task.Params) { p.Status = task.Working; p.TTL = 0; p.PollInterval = 0 }), func() mcp.LegacyTask {
			w := want(mcp.TaskWorking, "")
			w.TTL, w.PollInterval = nil, nil
			return w
		}()},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, legacyTask(tt.in)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestLegacyToolViews: how each kind of tool appears to a legacy session
// with and without tasks.
func TestLegacyToolViews(t *testing.T) {
	required := &mcp.ToolExecution{TaskSupport: mcp.TaskSupportRequired}
	optional := &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	tests := []struct {
		name  string
		entry toolEntry
		tasks bool
		want  legacyToolView
	}{
		{"plain tool, tasks", toolEntry{mode: taskNever}, true, legacyToolView{}},
		{"plain tool, no tasks", toolEntry{mode: taskNever}, false, legacyToolView{}},
		{"required, tasks", toolEntry{mode: taskRequired}, true, legacyToolView{execution: required}},
		{"required inline, tasks", toolEntry{mode: taskRequired, waitInline: true}, true, legacyToolView{execution: required}},
		{"required, no tasks", toolEntry{mode: taskRequired}, false, legacyToolView{hidden: true}},
		{"required inline, no tasks", toolEntry{mode: taskRequired, waitInline: true}, false, legacyToolView{inline: true}},
		{"optional, tasks", toolEntry{mode: taskOptional}, true, legacyToolView{execution: optional}},
		{"optional, no tasks", toolEntry{mode: taskOptional}, false, legacyToolView{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.entry.legacyView(tt.tasks), cmp.AllowUnexported(legacyToolView{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
