package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestStdioLegacyTasks: a 2025-11-25 client on stdio creates a task with
// params.task, reads it with tasks/get, waits in tasks/result while the
// worker completes it, and receives notifications/tasks/status, all
// through the same legacy tasks layer as HTTP.
func TestStdioLegacyTasks(t *testing.T) {
	r := newLTRig(t, nil)
	rig := newStdioRig(t, r.srv, server.StdioOptions{})
	init := stdioInitialize(t, rig, ltV11, ltTasksCaps)
	if !strings.Contains(string(init.Result), `"tasks":`) {
		t.Fatalf("initialize offers no tasks: %s", init.line)
	}
	created := rig.call("1", "tools/call", `{"name":"build","arguments":{},"task":{"ttl":60000}}`)
	id := r.nextCreated()
	var cr mcp.LegacyCreateTaskResult
	if err := json.Unmarshal(created.Result, &cr); err != nil || cr.Task.TaskID != id || cr.Task.Status != mcp.TaskWorking {
		t.Fatalf("CreateTaskResult %s", created.line)
	}
	if get := rig.call("2", "tasks/get", `{"taskId":"`+id+`"}`); !strings.Contains(string(get.Result), `"status":"working"`) {
		t.Fatalf("tasks/get %s", get.line)
	}
	rig.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
	if _, err := r.mem.Complete(id, ltResult(3), "built"); err != nil {
		t.Fatal(err)
	}
	var result, status bool
	for !result || !status {
		m := rig.recv()
		switch {
		case string(m.ID) == "3":
			if !strings.Contains(string(m.Result), `"structuredContent":{"sum":3}`) {
				t.Fatalf("tasks/result %s", m.line)
			}
			result = true
		case m.Method == mcp.NotificationTasksStatus:
			status = status || strings.Contains(string(m.Params), `"status":"completed"`)
		default:
			t.Fatalf("unexpected %s", m.line)
		}
	}
}

// TestStdioLegacyWaitInline: a 2025 client without tasks calls a task
// tool that waits inline; the call answers with the task's result once
// the worker completes it.
func TestStdioLegacyWaitInline(t *testing.T) {
	r := newLTRig(t, nil)
	rig := newStdioRig(t, r.srv, server.StdioOptions{})
	stdioInitialize(t, rig, ltV11, ltNoCaps)
	rig.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"build.inline","arguments":{}}}`)
	id := r.nextCreated()
	if _, err := r.mem.Complete(id, ltResult(5), "built"); err != nil {
		t.Fatal(err)
	}
	for {
		m := rig.recv()
		if m.Method != "" {
			continue // progress or status notifications of the wait
		}
		if string(m.ID) != "1" || !strings.Contains(string(m.Result), `"structuredContent":{"sum":5}`) {
			t.Fatalf("inline result %s", m.line)
		}
		return
	}
}
