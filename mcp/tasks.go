package mcp

import (
	"encoding/json"
	"maps"
)

// TaskStatus is the state of a task (Tasks extension). Tasks move between
// TaskWorking and TaskInputRequired and end in one of the terminal states.
type TaskStatus string

// Task states, spelt exactly as on the wire.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is a terminal state (completed, failed or
// cancelled), which never changes again.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskInfo is the base task object (the extension schema's Task). Times are
// ISO 8601 strings; RFC 3339 UTC ("2026-08-01T10:00:00Z") is recommended.
//
// TaskInfo and DetailedTask define no JSON methods so that the result types
// embedding them encode flat; Meta is the _meta member of the enclosing
// object.
type TaskInfo struct {
	// TaskID is server-generated, unguessable and header-safe (it is sent
	// as the Mcp-Name header).
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt"`
	LastUpdatedAt string     `json:"lastUpdatedAt"`
	// TTLMs is the lifetime in milliseconds from CreatedAt. The member is
	// always encoded; nil encodes as null, meaning unlimited.
	TTLMs *int64 `json:"ttlMs"`
	// PollIntervalMs is the suggested polling interval in milliseconds.
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`
	Meta           `json:"_meta,omitzero"`
}

// DetailedTask is a task with its status-specific members, as returned by
// tasks/get and sent in notifications/tasks:
//
//   - TaskInputRequired: InputRequests lists every outstanding request (nil
//     encodes as {} in that state);
//   - TaskCompleted: Result is the JSON object the original request would
//     have returned (a CallToolResult, also when its isError is true);
//   - TaskFailed: Error is the JSON-RPC error that ended the task.
//
// The members must be left unset in the other states.
type DetailedTask struct {
	TaskInfo
	InputRequests InputRequests   `json:"inputRequests,omitzero"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *Error          `json:"error,omitempty"`
}

// normalized returns d with the members the schema requires for its status
// filled in where they can be without inventing data.
func (d DetailedTask) normalized() DetailedTask {
	if d.Status == TaskInputRequired && d.InputRequests == nil {
		d.InputRequests = InputRequests{}
	}
	return d
}

// CreateTaskResult is the result of a request the server turned into a task
// (for now only tools/call). The zero ResultType encodes as "task"; the
// result is flat, with the task members beside resultType.
type CreateTaskResult struct {
	ResultType ResultType `json:"resultType"`
	TaskInfo
}

// MarshalJSON implements json.Marshaler, filling in the default ResultType.
func (r CreateTaskResult) MarshalJSON() ([]byte, error) {
	type wire CreateTaskResult
	if r.ResultType == "" {
		r.ResultType = ResultTask
	}
	return json.Marshal(wire(r))
}

// GetTaskResult is the result of tasks/get: the detailed task, flat, with
// ResultType "complete" (the zero ResultType encodes as that).
type GetTaskResult struct {
	ResultType ResultType `json:"resultType"`
	DetailedTask
}

// MarshalJSON implements json.Marshaler, filling in the defaults.
func (r GetTaskResult) MarshalJSON() ([]byte, error) {
	type wire GetTaskResult
	r.ResultType = orComplete(r.ResultType)
	r.DetailedTask = r.DetailedTask.normalized()
	return json.Marshal(wire(r))
}

// TaskParams are the params of tasks/get and tasks/cancel.
type TaskParams struct {
	TaskID string `json:"taskId"`
	RequestParams
}

// UpdateTaskParams are the params of tasks/update, which answers some or all
// of a task's input requests. Nil InputResponses encodes as {}.
type UpdateTaskParams struct {
	TaskID         string         `json:"taskId"`
	InputResponses InputResponses `json:"inputResponses"`
	RequestParams
}

// MarshalJSON implements json.Marshaler.
func (p UpdateTaskParams) MarshalJSON() ([]byte, error) {
	type wire UpdateTaskParams
	if p.InputResponses == nil {
		p.InputResponses = InputResponses{}
	}
	return json.Marshal(wire(p))
}

// TaskNotificationParams are the params of notifications/tasks: the full
// detailed task (without resultType) plus the notification _meta, which on a
// listen stream carries MetaSubscriptionID.
//
// The task's own TaskInfo.Meta and the notification Meta share the single
// _meta member. Encoding merges them, Meta winning on a key present in both;
// decoding puts the whole _meta into Meta and leaves TaskInfo.Meta nil.
type TaskNotificationParams struct {
	DetailedTask
	Meta Meta `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (p TaskNotificationParams) MarshalJSON() ([]byte, error) {
	type wire TaskNotificationParams
	if p.TaskInfo.Meta != nil {
		merged := maps.Clone(p.TaskInfo.Meta)
		maps.Copy(merged, p.Meta)
		p.Meta = merged
	}
	p.DetailedTask = p.DetailedTask.normalized()
	return json.Marshal(wire(p))
}
