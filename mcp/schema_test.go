package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/internal/schemacheck"
)

// These tests encode values built in Go and validate them against the
// official schemas, so that zero values and constructors produce valid
// wire messages.

func ptr[T any](v T) *T { return &v }

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%T): %v", v, err)
	}
	return b
}

func serverInfo() Meta {
	return Meta{MetaServerInfo: Implementation{Name: "taskwire-test", Version: "0.0.1"}}
}

func TestConstructedResultsValidate(t *testing.T) {
	tests := []struct {
		def string
		v   any
	}{
		{"CallToolResult", CallToolResult{}},
		{"CallToolResult", &CallToolResult{
			Content:           []Content{&TextContent{Text: "done"}, &ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
			StructuredContent: json.RawMessage(`{"ok":true}`),
			Meta:              serverInfo(),
		}},
		{"CallToolResult", CallToolResult{IsError: true, Content: []Content{&TextContent{Text: "boom"}}}},
		{"CallToolResult", CallToolResult{Content: []Content{
			&ResourceLink{URI: "file:///a", Name: "a", Size: ptr(int64(3))},
			&EmbeddedResource{Resource: &ResourceContents{URI: "file:///a", Text: ""}},
			&EmbeddedResource{Resource: &ResourceContents{URI: "file:///b", Blob: []byte{}}},
			&AudioContent{MIMEType: "audio/wav"},
		}}},
		{"DiscoverResult", DiscoverResult{}},
		{"DiscoverResult", &DiscoverResult{
			SupportedVersions: []string{LatestProtocolVersion},
			Capabilities: &ServerCapabilities{
				Tools:      &ToolsCapability{ListChanged: true},
				Extensions: map[string]Object{ExtensionTasks: {}},
			},
			Instructions: "use the tools",
			TTLMs:        3600000,
			CacheScope:   CachePublic,
			Meta:         serverInfo(),
		}},
		{"ListToolsResult", ListToolsResult{}},
		{"ListToolsResult", ListToolsResult{Tools: []*Tool{{Name: "t"}}, NextCursor: "c", TTLMs: 10}},
		{"ListResourcesResult", ListResourcesResult{}},
		{"ListResourceTemplatesResult", ListResourceTemplatesResult{}},
		{"ListPromptsResult", ListPromptsResult{Prompts: []*Prompt{{Name: "p", Arguments: []*PromptArgument{{Name: "a", Required: true}}}}}},
		{"ReadResourceResult", ReadResourceResult{}},
		{"ReadResourceResult", ReadResourceResult{Contents: []*ResourceContents{{URI: "file:///x", MIMEType: "text/plain"}}}},
		{"GetPromptResult", GetPromptResult{}},
		{"GetPromptResult", GetPromptResult{Messages: []*PromptMessage{{Role: RoleUser, Content: &TextContent{Text: "hi"}}}}},
		{"CompleteResult", CompleteResult{}},
		{"CompleteResult", CompleteResult{Completion: CompletionValues{Values: []string{"a"}, Total: ptr(1)}}},
		{"Result", EmptyResult{}},
		{"SubscriptionsListenResult", ListenResult{Meta: Meta{MetaSubscriptionID: json.RawMessage(`7`)}}},
		{"InputRequiredResult", InputRequiredResult{RequestState: "opaque"}},
		{"InputRequiredResult", InputRequiredResult{
			InputRequests: InputRequests{
				"form":  NewElicitFormRequest("Proceed?", json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)),
				"url":   NewElicitURLRequest("Sign in", "https://example.com/login"),
				"roots": {Method: MethodRootsList},
				"llm": {Method: MethodSamplingCreateMessage, Params: mustMarshal(t, CreateMessageParams{
					Messages:  []*SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "?"}}}},
					MaxTokens: 10,
				})},
			},
			RequestState: "s",
		}},
		{"InputResponses", InputResponses{
			"form":  mustMarshal(t, ElicitResult{Action: ElicitActionAccept, Content: map[string]any{"ok": true}}),
			"url":   mustMarshal(t, ElicitResult{Action: ElicitActionDecline}),
			"roots": mustMarshal(t, ListRootsResult{}),
			"llm":   mustMarshal(t, CreateMessageResult{Role: RoleAssistant, Content: []Content{&TextContent{Text: "!"}}, Model: "m"}),
		}},
		{"Tool", Tool{Name: "no-schema"}},
		{"Tool", Tool{Name: "t", Annotations: &ToolAnnotations{ReadOnlyHint: ptr(true)}, OutputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"ProgressNotificationParams", ProgressParams{ProgressToken: json.RawMessage(`"tok"`), Progress: 1, Total: ptr(2.0)}},
		{"LoggingMessageNotificationParams", LoggingMessageParams{Level: LevelInfo, Data: json.RawMessage(`"hello"`)}},
		{"SubscriptionsAcknowledgedNotificationParams", AcknowledgedParams{Meta: Meta{MetaSubscriptionID: "listen-1"}}},
		{"CancelledNotificationParams", CancelledParams{RequestID: IntID(3)}},
	}
	for _, tt := range tests {
		b := mustMarshal(t, tt.v)
		if err := schemacheck.Validate(tt.def, b); err != nil {
			t.Errorf("%T %s is not a valid %s: %v", tt.v, b, tt.def, err)
		}
	}
}

func TestElicitConstructorsValidate(t *testing.T) {
	form := NewElicitFormRequest("Name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`))
	if err := schemacheck.Validate("ElicitRequestFormParams", form.Params); err != nil {
		t.Errorf("form params %s: %v", form.Params, err)
	}
	if err := schemacheck.Validate("ElicitRequest", mustMarshal(t, form)); err != nil {
		t.Errorf("form request: %v", err)
	}
	url := NewElicitURLRequest("Go", "https://example.com/x")
	if err := schemacheck.Validate("ElicitRequestURLParams", url.Params); err != nil {
		t.Errorf("url params %s: %v", url.Params, err)
	}
}

func TestRequestsValidate(t *testing.T) {
	meta := &RequestMeta{
		ProtocolVersion:    LatestProtocolVersion,
		ClientCapabilities: &ClientCapabilities{Extensions: map[string]Object{ExtensionTasks: {}}},
	}
	tests := []struct {
		def    string
		tasks  bool
		method string
		params any
	}{
		{"CallToolRequest", false, MethodToolsCall, CallToolParams{Name: "x", Arguments: json.RawMessage(`{"a":1}`), RequestParams: RequestParams{Meta: meta}}},
		{"DiscoverRequest", false, MethodServerDiscover, DiscoverParams{RequestParams: RequestParams{Meta: meta}}},
		{"SubscriptionsListenRequest", false, MethodSubscriptionsListen, ListenParams{RequestParams: RequestParams{Meta: meta}}},
		{"SubscriptionsListenRequest", false, MethodSubscriptionsListen, ListenParams{RequestParams: RequestParams{Meta: meta}, Notifications: &SubscriptionFilter{TaskIDs: []string{"t-1"}, ToolsListChanged: true}}},
		{"CompleteRequest", false, MethodCompletionComplete, CompleteParams{Ref: &CompleteReference{Type: RefResource, URI: "file:///{p}"}, Argument: CompleteArgument{Name: "p", Value: "a"}, RequestParams: RequestParams{Meta: meta}}},
		{"GetTaskRequest", true, MethodTasksGet, TaskParams{TaskID: "t-1", RequestParams: RequestParams{Meta: meta}}},
		{"CancelTaskRequest", true, MethodTasksCancel, TaskParams{TaskID: "t-1", RequestParams: RequestParams{Meta: meta}}},
		{"UpdateTaskRequest", true, MethodTasksUpdate, UpdateTaskParams{TaskID: "t-1", RequestParams: RequestParams{Meta: meta}}},
		{"UpdateTaskRequest", true, MethodTasksUpdate, UpdateTaskParams{TaskID: "t-1", RequestParams: RequestParams{Meta: meta}, InputResponses: InputResponses{
			"k": mustMarshal(t, ElicitResult{Action: ElicitActionCancel}),
		}}},
	}
	for _, tt := range tests {
		b := mustMarshal(t, &Request{JSONRPC: JSONRPCVersion, ID: IntID(1), Method: tt.method, Params: mustMarshal(t, tt.params)})
		validate := schemacheck.Validate
		if tt.tasks {
			validate = schemacheck.ValidateTasks
		}
		if err := validate(tt.def, b); err != nil {
			t.Errorf("%s is not a valid %s: %v", b, tt.def, err)
		}
	}
}

func TestErrorResponsesValidate(t *testing.T) {
	tests := []struct {
		def string
		err *Error
	}{
		{"HeaderMismatchError", HeaderMismatch("Mcp-Method header does not match the body")},
		{"MissingRequiredClientCapabilityError", MissingCapabilities(&ClientCapabilities{Elicitation: &ElicitationCapability{}})},
		{"MissingRequiredClientCapabilityError", MissingCapabilities(&ClientCapabilities{Extensions: map[string]Object{ExtensionTasks: {}}})},
		{"UnsupportedProtocolVersionError", UnsupportedVersion([]string{LatestProtocolVersion}, "1900-01-01")},
		{"JSONRPCErrorResponse", InternalError()},
		{"JSONRPCErrorResponse", MethodNotFound()},
		{"JSONRPCErrorResponse", InvalidParams("Unknown tool")},
	}
	for _, tt := range tests {
		for _, id := range []ID{IntID(1), StringID("a")} {
			b := AppendError(nil, id, tt.err)
			if err := schemacheck.Validate(tt.def, b); err != nil {
				t.Errorf("%s is not a valid %s: %v", b, tt.def, err)
			}
		}
	}
	// The -32021 data is an object naming the capabilities, never an array.
	b := AppendError(nil, IntID(1), MissingCapabilities(&ClientCapabilities{Extensions: map[string]Object{ExtensionTasks: {}}}))
	if want := `"data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`; !strings.Contains(string(b), want) {
		t.Errorf("got %s, want it to contain %s", b, want)
	}
}

func TestTaskResultsValidate(t *testing.T) {
	base := TaskInfo{
		TaskID:         "7f3c0a9e-2b1d-4c6e-9a55-0d8e4b7c1f20",
		Status:         TaskWorking,
		StatusMessage:  "queued",
		CreatedAt:      "2026-08-01T10:00:00Z",
		LastUpdatedAt:  "2026-08-01T10:00:00Z",
		TTLMs:          ptr(int64(3600000)),
		PollIntervalMs: ptr(int64(2000)),
	}

	created := CreateTaskResult{TaskInfo: base}
	created.TTLMs = nil
	created.Meta = serverInfo()
	b := mustMarshal(t, created)
	if err := schemacheck.ValidateTasks("CreateTaskResult", b); err != nil {
		t.Errorf("CreateTaskResult %s: %v", b, err)
	}
	for _, want := range []string{`"resultType":"task"`, `"ttlMs":null`, `"io.modelcontextprotocol/serverInfo"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("CreateTaskResult %s lacks %s", b, want)
		}
	}

	callResult := mustMarshal(t, CallToolResult{Content: []Content{&TextContent{Text: "done"}}})
	details := map[TaskStatus]DetailedTask{
		TaskWorking:       {},
		TaskInputRequired: {InputRequests: InputRequests{"confirm-1": NewElicitFormRequest("Proceed?", json.RawMessage(`{"type":"object","properties":{}}`))}},
		TaskCompleted:     {Result: callResult},
		TaskFailed:        {Error: &Error{Code: CodeInternalError, Message: "API rate limit exceeded"}},
		TaskCancelled:     {},
	}
	for status, d := range details {
		d.TaskInfo = base
		d.Status = status
		if status == TaskCancelled {
			d.TTLMs = nil
		}
		b := mustMarshal(t, GetTaskResult{DetailedTask: d})
		if err := schemacheck.ValidateTasks("GetTaskResult", b); err != nil {
			t.Errorf("GetTaskResult(%s) %s: %v", status, b, err)
		}
		if err := schemacheck.ValidateTasks("DetailedTask", b); err != nil {
			t.Errorf("DetailedTask(%s) %s: %v", status, b, err)
		}
		n := TaskNotificationParams{DetailedTask: d, Meta: Meta{MetaSubscriptionID: 7}}
		nb := AppendNotification(nil, NotificationTasks, mustMarshal(t, n))
		if err := schemacheck.ValidateTasks("TaskStatusNotification", nb); err != nil {
			t.Errorf("TaskStatusNotification(%s) %s: %v", status, nb, err)
		}
	}

	// An input_required task with no outstanding requests still carries
	// the required member.
	d := DetailedTask{TaskInfo: base}
	d.Status = TaskInputRequired
	b = mustMarshal(t, GetTaskResult{DetailedTask: d})
	if err := schemacheck.ValidateTasks("GetTaskResult", b); err != nil {
		t.Errorf("GetTaskResult without input requests %s: %v", b, err)
	}

	for _, def := range []string{"UpdateTaskResult", "CancelTaskResult"} {
		if err := schemacheck.ValidateTasks(def, mustMarshal(t, EmptyResult{})); err != nil {
			t.Errorf("EmptyResult as %s: %v", def, err)
		}
	}

	// The schema rejects what the types must never produce.
	bad := mustMarshal(t, CreateTaskResult{ResultType: ResultComplete, TaskInfo: base})
	if schemacheck.ValidateTasks("CreateTaskResult", bad) == nil {
		t.Errorf("CreateTaskResult with resultType complete validated: %s", bad)
	}
}
