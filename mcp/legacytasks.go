package mcp

import (
	"encoding/json"
	"fmt"
)

// This file holds the wire types of the experimental tasks of revision
// 2025-11-25 (basic/utilities/tasks.mdx). They are not wire-compatible with
// the Tasks extension of 2026-07-28 (tasks.go): the task is nested in
// CreateTaskResult, durations are "ttl" and "pollInterval", results carry no
// resultType, and the result is fetched with the blocking tasks/result.
// The capabilities and the tools' execution member are in legacy.go.

// Reserved _meta keys of the 2025-11-25 tasks.
const (
	// MetaRelatedTask associates a request, result or notification with a
	// task; its value is a RelatedTaskMeta. tasks/result results and the
	// server-to-client requests a task sends carry it; tasks/get,
	// tasks/list, tasks/cancel and notifications/tasks/status do not.
	MetaRelatedTask = "io.modelcontextprotocol/related-task"
	// MetaModelImmediateResponse may carry, in a CreateTaskResult, a string
	// that a host passes to the model as the immediate tool result.
	MetaModelImmediateResponse = "io.modelcontextprotocol/model-immediate-response"
)

// NotificationTasksStatus is the optional 2025-11-25 notification of a
// task's new state. Its params are a LegacyTask.
const NotificationTasksStatus = "notifications/tasks/status"

// RelatedTaskMeta is the value of the MetaRelatedTask _meta key.
type RelatedTaskMeta struct {
	TaskID string `json:"taskId"`
}

// TaskMetadata is the "task" member of a task-augmented request's params: the
// client asks for the request to run as a task.
type TaskMetadata struct {
	// TTL is the requested retention from creation in milliseconds; nil
	// when the client did not ask. The server may override it.
	TTL *int64 `json:"ttl,omitempty"`
}

// UnmarshalJSON decodes the object, rejecting a ttl that is not a
// non-negative integer.
func (m *TaskMetadata) UnmarshalJSON(data []byte) error {
	*m = TaskMetadata{}
	if len(data) == 0 || data[0] != '{' {
		return fmt.Errorf("mcp: task must be an object")
	}
	return EachMember(data, func(name, raw []byte) error {
		if string(name) != "ttl" || string(raw) == "null" {
			return nil
		}
		var v int64
		if err := json.Unmarshal(raw, &v); err != nil || v < 0 {
			return fmt.Errorf("mcp: task.ttl must be a non-negative integer")
		}
		m.TTL = &v
		return nil
	})
}

// LegacyTask is the 2025-11-25 Task object: the state of a task without its
// payload. It is also, flat, the result of tasks/get and tasks/cancel and
// the params of notifications/tasks/status (Meta is then the enclosing
// object's _meta).
type LegacyTask struct {
	TaskID string     `json:"taskId"`
	Status TaskStatus `json:"status"`
	// StatusMessage is optional human-readable text; for a failed task it
	// should say what went wrong.
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are ISO 8601 (RFC 3339) timestamps.
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is the retention from CreatedAt in milliseconds. The member is
	// always encoded; nil encodes as null, meaning unlimited.
	TTL *int64 `json:"ttl"`
	// PollInterval is the suggested polling interval in milliseconds.
	PollInterval *int64 `json:"pollInterval,omitempty"`
	Meta         Meta   `json:"_meta,omitzero"`
}

// LegacyCreateTaskResult is the 2025-11-25 answer to a task-augmented
// request: the new task, nested under "task".
type LegacyCreateTaskResult struct {
	Task LegacyTask `json:"task"`
	Meta Meta       `json:"_meta,omitzero"`
}

// LegacyTaskParams are the params of the 2025-11-25 tasks/get, tasks/result
// and tasks/cancel. A MetaRelatedTask in _meta is ignored in favour of
// TaskID.
type LegacyTaskParams struct {
	TaskID string `json:"taskId"`
	Meta   Meta   `json:"_meta,omitzero"`
}

// LegacyListTasksParams are the params of tasks/list.
type LegacyListTasksParams struct {
	// Cursor is an opaque cursor from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
	Meta   Meta   `json:"_meta,omitzero"`
}

// LegacyListTasksResult is the result of tasks/list. Nil Tasks encodes as
// [].
type LegacyListTasksResult struct {
	Tasks []LegacyTask `json:"tasks"`
	// NextCursor, when set, means more tasks may follow.
	NextCursor string `json:"nextCursor,omitempty"`
	Meta       Meta   `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, encoding nil Tasks as [].
func (r LegacyListTasksResult) MarshalJSON() ([]byte, error) {
	type wire LegacyListTasksResult
	r.Tasks = nonNil(r.Tasks)
	return json.Marshal(wire(r))
}
