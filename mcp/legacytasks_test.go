package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/schemacheck"
)

// legacySchema is the official 2025-11-25 schema (see
// testdata/schema-2025-11-25/README.md).
var legacySchema = sync.OnceValue(func() *schemacheck.Set {
	src, err := os.ReadFile("testdata/schema-2025-11-25/schema.json")
	if err != nil {
		panic(err)
	}
	return schemacheck.NewSet("https://modelcontextprotocol.io/schema/2025-11-25/schema.json", src)
})

func legacyTaskFixture() LegacyTask {
	return LegacyTask{
		TaskID:        "786512e2-9e0d-44bd-8f29-789f320fe840",
		Status:        TaskWorking,
		StatusMessage: "The operation is now in progress.",
		CreatedAt:     "2025-11-25T10:30:00.000Z",
		LastUpdatedAt: "2025-11-25T10:40:00.000Z",
		TTL:           ptr(int64(60000)),
		PollInterval:  ptr(int64(5000)),
	}
}

// TestLegacyTaskTypesValidate encodes every 2025-11-25 task type built in Go
// and validates it against the official schema definition of that type.
func TestLegacyTaskTypesValidate(t *testing.T) {
	full := legacyTaskFixture()
	unlimited := LegacyTask{TaskID: "t", Status: TaskCancelled, CreatedAt: "2025-11-25T10:30:00Z", LastUpdatedAt: "2025-11-25T10:30:00Z"}
	tests := []struct {
		def string
		v   any
	}{
		{"Task", full},
		{"Task", unlimited},
		{"Task", LegacyTask{TaskID: "t", Status: TaskInputRequired, CreatedAt: "x", LastUpdatedAt: "x", TTL: ptr(int64(0))}},
		{"CreateTaskResult", LegacyCreateTaskResult{Task: full}},
		{"CreateTaskResult", LegacyCreateTaskResult{Task: full, Meta: Meta{MetaModelImmediateResponse: "Started; I will report back."}}},
		{"GetTaskResult", full},
		{"GetTaskResult", unlimited},
		{"CancelTaskResult", LegacyTask{TaskID: "t", Status: TaskCancelled, StatusMessage: "The task was cancelled by request.", CreatedAt: "x", LastUpdatedAt: "x", TTL: ptr(int64(1))}},
		{"ListTasksResult", LegacyListTasksResult{}},
		{"ListTasksResult", LegacyListTasksResult{Tasks: []LegacyTask{full, unlimited}, NextCursor: "c"}},
		{"TaskStatusNotificationParams", LegacyTask{TaskID: "t", Status: TaskCompleted, CreatedAt: "x", LastUpdatedAt: "x"}},
		{"TaskMetadata", TaskMetadata{}},
		{"TaskMetadata", TaskMetadata{TTL: ptr(int64(60000))}},
		{"RelatedTaskMetadata", RelatedTaskMeta{TaskID: "t"}},
		{"ToolExecution", ToolExecution{}},
		{"ToolExecution", ToolExecution{TaskSupport: TaskSupportRequired}},
		{"ToolExecution", ToolExecution{TaskSupport: TaskSupportOptional}},
		{"ToolExecution", ToolExecution{TaskSupport: TaskSupportForbidden}},
		{"PaginatedRequestParams", LegacyListTasksParams{Cursor: "c"}},
		{"GetTaskPayloadResult", CallToolResult{Content: []Content{&TextContent{Text: "done"}}, Meta: Meta{MetaRelatedTask: RelatedTaskMeta{TaskID: "t"}}}},
	}
	for _, tt := range tests {
		b := mustMarshal(t, tt.v)
		if err := legacySchema().Validate(tt.def, b); err != nil {
			t.Errorf("%T as %s: %s\n%v", tt.v, tt.def, b, err)
		}
	}
}

// TestLegacyTaskMessagesValidate validates whole JSON-RPC messages built
// from the types: requests the server reads and sends, the notification and
// the capabilities.
func TestLegacyTaskMessagesValidate(t *testing.T) {
	rpc := func(members string) []byte { return []byte(`{"jsonrpc":"2.0",` + members + `}`) }
	params := func(v any) string { return string(mustMarshal(t, v)) }
	tests := []struct {
		def string
		doc []byte
	}{
		{"GetTaskRequest", rpc(`"id":3,"method":"tasks/get","params":` + params(LegacyTaskParams{TaskID: "t"}))},
		{"GetTaskPayloadRequest", rpc(`"id":4,"method":"tasks/result","params":` + params(LegacyTaskParams{TaskID: "t"}))},
		{"CancelTaskRequest", rpc(`"id":6,"method":"tasks/cancel","params":` + params(LegacyTaskParams{TaskID: "t"}))},
		{"ListTasksRequest", rpc(`"id":5,"method":"tasks/list","params":` + params(LegacyListTasksParams{}))},
		{"TaskStatusNotification", rpc(`"method":"notifications/tasks/status","params":` + params(legacyTaskFixture()))},
		{"ElicitRequest", rpc(`"id":"n1-1","method":"elicitation/create","params":{"mode":"form","message":"Approve?",` +
			`"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}},` +
			`"_meta":{"io.modelcontextprotocol/related-task":` + params(RelatedTaskMeta{TaskID: "t"}) + `}}`)},
		{"CallToolRequest", rpc(`"id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"New York"},"task":` +
			params(TaskMetadata{TTL: ptr(int64(60000))}) + `}`)},
	}
	for _, tt := range tests {
		if err := legacySchema().Validate(tt.def, tt.doc); err != nil {
			t.Errorf("%s: %s\n%v", tt.def, tt.doc, err)
		}
	}
}

// TestLegacyTaskEncoding pins the exact bytes of the shapes that differ
// from the extension's: the nested task, ttl always present (null when
// unlimited), no resultType anywhere.
func TestLegacyTaskEncoding(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{LegacyCreateTaskResult{Task: legacyTaskFixture()}, `{"task":{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working",` +
			`"statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00.000Z","lastUpdatedAt":"2025-11-25T10:40:00.000Z",` +
			`"ttl":60000,"pollInterval":5000}}`},
		{LegacyTask{TaskID: "t", Status: TaskCancelled, CreatedAt: "a", LastUpdatedAt: "b"},
			`{"taskId":"t","status":"cancelled","createdAt":"a","lastUpdatedAt":"b","ttl":null}`},
		{LegacyListTasksResult{}, `{"tasks":[]}`},
		{TaskMetadata{}, `{}`},
		{ToolExecution{TaskSupport: TaskSupportRequired}, `{"taskSupport":"required"}`},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, string(mustMarshal(t, tt.v))); diff != "" {
			t.Errorf("%T (-want +got):\n%s", tt.v, diff)
		}
	}
}

func TestTaskMetadataDecode(t *testing.T) {
	tests := []struct {
		in      string
		want    TaskMetadata
		wantErr string
	}{
		{in: `{}`},
		{in: `{"ttl":60000}`, want: TaskMetadata{TTL: ptr(int64(60000))}},
		{in: `{"ttl":null}`},
		{in: `{"other":1,"ttl":0}`, want: TaskMetadata{TTL: ptr(int64(0))}},
		{in: `{"ttl":-1}`, wantErr: "non-negative integer"},
		{in: `{"ttl":1.5}`, wantErr: "non-negative integer"},
		{in: `{"ttl":"60000"}`, wantErr: "non-negative integer"},
		{in: `[]`, wantErr: "must be an object"},
		{in: `null`, wantErr: "must be an object"},
	}
	for _, tt := range tests {
		var got TaskMetadata
		err := json.Unmarshal([]byte(tt.in), &got)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestLegacySchemaRejects makes sure the schema copy is really enforced:
// the shapes the 2026 extension uses are invalid under 2025-11-25.
func TestLegacySchemaRejects(t *testing.T) {
	tests := []struct {
		def, doc string
	}{
		{"Task", `{"taskId":"t","status":"working","createdAt":"x","lastUpdatedAt":"x"}`},                     // ttl missing
		{"Task", `{"taskId":"t","status":"canceled","createdAt":"x","lastUpdatedAt":"x","ttl":null}`},         // spelling
		{"CreateTaskResult", `{"taskId":"t","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":1}`}, // flat
		{"ToolExecution", `{"taskSupport":"always"}`},
	}
	for _, tt := range tests {
		if err := legacySchema().Validate(tt.def, []byte(tt.doc)); err == nil {
			t.Errorf("%s accepted %s", tt.def, tt.doc)
		}
	}
}
