package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
)

// testEndpoint returns a built endpoint for encoder tests.
func testEndpoint(t testing.TB) *Endpoint {
	ep := NewEndpoint(EndpointOptions{Path: "/mcp", Name: "enc<&>", Version: "1.0.0"})
	if _, err := New(Options{Endpoints: []*Endpoint{ep}}); err != nil {
		t.Fatal(err)
	}
	return ep
}

// checkSameAsMarshal asserts the fast encoder matches encoding/json exactly.
func checkSameAsMarshal(t testing.TB, ep *Endpoint, r *mcp.CallToolResult) {
	want, err := json.Marshal(ep.withMeta(r))
	got, ok := ep.appendToolResult(nil, r)
	if !ok {
		return // not the fast shape: encoding/json handles it
	}
	if err != nil {
		t.Fatalf("fast path encoded a result encoding/json rejects: %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("fast encoding differs from encoding/json (-want +got):\n%s", diff)
	}
}

func TestAppendToolResultMatchesMarshal(t *testing.T) {
	ep := testEndpoint(t)
	tests := []*mcp.CallToolResult{
		{},
		{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028\u2029é日本\xff\xfe"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "x"}, &mcp.TextContent{Text: ""}}, IsError: true},
		{StructuredContent: json.RawMessage(` { "a" : [ 1 , 2.50 ] , "b" : "s p" } `)},
		{StructuredContent: json.RawMessage(`{"n":1e3}`), Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}},
		{ResultType: mcp.ResultComplete, Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}},
	}
	for _, r := range tests {
		checkSameAsMarshal(t, ep, r)
	}
	// Shapes the fast path must leave to encoding/json.
	for _, r := range []*mcp.CallToolResult{
		{Meta: mcp.Meta{"k": 1}},
		{ResultType: mcp.ResultTask},
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		{StructuredContent: json.RawMessage(`{bad`)},
	} {
		if _, ok := ep.appendToolResult(nil, r); ok {
			t.Errorf("fast path accepted %+v", r)
		}
	}
}

func FuzzAppendToolResult(f *testing.F) {
	f.Add("hello", `{"a":1}`, false)
	f.Add("<\u2028\xff>", ` [ 1 , "x y" ] `, true)
	ep := testEndpoint(f)
	f.Fuzz(func(t *testing.T, text, structured string, isError bool) {
		r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
		if structured != "" {
			r.StructuredContent = json.RawMessage(structured)
		}
		checkSameAsMarshal(t, ep, r)
	})
}

func TestAppendTaskResultMatchesMarshal(t *testing.T) {
	ep := testEndpoint(t)
	ttl, poll := int64(3600000), int64(1000)
	result, _ := mcp.AppendToolResult(nil, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done <&>"}}, StructuredContent: json.RawMessage(`{"a":1}`)}, nil)
	tests := []mcp.DetailedTask{
		{TaskInfo: mcp.TaskInfo{TaskID: "t-1", Status: mcp.TaskWorking, CreatedAt: "2026-08-01T10:00:00.000Z", LastUpdatedAt: "2026-08-01T10:00:00.000Z", TTLMs: &ttl, PollIntervalMs: &poll}},
		{TaskInfo: mcp.TaskInfo{TaskID: "t-2", Status: mcp.TaskCompleted, StatusMessage: "é\"\n", CreatedAt: "a", LastUpdatedAt: "b"}, Result: result},
		{TaskInfo: mcp.TaskInfo{TaskID: "t-3", Status: mcp.TaskFailed, CreatedAt: "a", LastUpdatedAt: "b", TTLMs: &ttl}, Error: &mcp.Error{Code: -32603, Message: "boom", Data: json.RawMessage(`{"x":1}`)}},
		{TaskInfo: mcp.TaskInfo{TaskID: "t-4", Status: mcp.TaskCancelled, CreatedAt: "a", LastUpdatedAt: "b"}},
	}
	for _, d := range tests {
		want, err := json.Marshal(ep.withMeta(&mcp.GetTaskResult{DetailedTask: d}))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ep.appendTaskResult(nil, &d)
		if !ok {
			t.Fatalf("fast path refused %s", d.TaskID)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", d.TaskID, diff)
		}
	}
	d := mcp.DetailedTask{TaskInfo: mcp.TaskInfo{TaskID: "t", Status: mcp.TaskInputRequired}, InputRequests: mcp.InputRequests{}}
	if _, ok := ep.appendTaskResult(nil, &d); ok {
		t.Error("fast path accepted input requests")
	}
}
