package server

import (
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// This file maps durable tasks onto the experimental tasks of revision
// 2025-11-25 (basic/utilities/tasks.mdx). The tasks are the same: created by
// the same task.Manager, with the same origin, binding and workers; only the
// wire shape and a few rules differ:
//
//   - a tool result with isError true ends the task as "failed" (the
//     extension says "completed"); tasks/result still returns that result;
//   - the task is nested in CreateTaskResult and durations are ttl and
//     pollInterval;
//   - the result comes from the blocking tasks/result, and input goes out as
//     real requests on its stream tagged with the related-task _meta key.

// legacyToolErrorMessage is the status message of a task whose tool
// reported an error, when the worker gave none. The tool's own text is not
// used: it is delivered only through tasks/result, after the sanitizer.
const legacyToolErrorMessage = "The tool reported an error; tasks/result returns it."

// legacyTask renders a snapshot as a 2025-11-25 Task.
func legacyTask(t task.Task) mcp.LegacyTask {
	info := t.Info()
	lt := mcp.LegacyTask{
		TaskID:        info.TaskID,
		Status:        info.Status,
		StatusMessage: info.StatusMessage,
		CreatedAt:     info.CreatedAt,
		LastUpdatedAt: info.LastUpdatedAt,
		TTL:           info.TTLMs,
		PollInterval:  info.PollIntervalMs,
		Meta:          info.Meta,
	}
	switch t.Status() {
	case task.Completed:
		if r := t.Result(); r != nil && r.IsError {
			lt.Status = task.Failed
			if lt.StatusMessage == "" {
				lt.StatusMessage = legacyToolErrorMessage
			}
		}
	case task.Failed:
		if lt.StatusMessage == "" {
			if e := t.Error(); e != nil {
				lt.StatusMessage = e.Message // client-safe by task.New's contract
			}
		}
	}
	return lt
}

// legacyTasksCapability is the tasks capability a session's initialize
// result offers, or nil. Only 2025-11-25 sessions of clients that declared
// the tasks capability get it, and only on endpoints that serve Tasks: the
// capability (and with it execution.taskSupport in tools/list) is what tells
// the client it may, and for task-required tools must, send params.task.
// tasks/list is declared only when the manager can list (task.Lister).
func (ep *Endpoint) legacyTasksCapability(version string, caps *mcp.LegacyClientCapabilities) *mcp.ServerTasksCapability {
	if !ep.servesLegacyTasks(version, caps) {
		return nil
	}
	c := &mcp.ServerTasksCapability{
		Cancel:   mcp.Object{},
		Requests: &mcp.ServerTaskRequestsLegacy{Tools: &mcp.ToolsTaskRequests{Call: mcp.Object{}}},
	}
	if _, ok := ep.srv.opts.TaskManager.(task.Lister); ok {
		c.List = mcp.Object{}
	}
	return c
}

// servesLegacyTasks reports whether a session of the given revision and
// client capabilities gets the 2025-11-25 tasks: the revision defines them,
// the client declared them, and the endpoint serves Tasks (it has tools that
// create tasks and the server a manager).
func (ep *Endpoint) servesLegacyTasks(version string, caps *mcp.LegacyClientCapabilities) bool {
	return version == mcp.ProtocolVersion20251125 && ep.tasks && caps != nil && caps.Tasks != nil
}

// legacyToolView says how a tool appears to a legacy session: its
// execution member, and whether it is listed and callable at all.
type legacyToolView struct {
	execution *mcp.ToolExecution
	// hidden: a task-required tool that the session cannot call (no tasks,
	// no waiting inline). It is left out of tools/list, and a call gets
	// errNeedsTasks.
	hidden bool
	// inline: the call runs as a task and the POST waits for its end.
	inline bool
}

// legacyView returns the view of tool e for a session; tasks is
// servesLegacyTasks for the session.
func (e *toolEntry) legacyView(tasks bool) legacyToolView {
	switch {
	case e.mode == taskNever:
		return legacyToolView{}
	case tasks && e.mode == taskRequired:
		return legacyToolView{execution: &mcp.ToolExecution{TaskSupport: mcp.TaskSupportRequired}}
	case tasks:
		return legacyToolView{execution: &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}}
	case e.mode == taskRequired && e.waitInline:
		return legacyToolView{inline: true}
	case e.mode == taskRequired:
		return legacyToolView{hidden: true}
	}
	return legacyToolView{} // optional-task tools answer inline without tasks
}
