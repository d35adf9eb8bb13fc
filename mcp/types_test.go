package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestZeroEncodings(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{CallToolResult{}, `{"resultType":"complete","content":[]}`},
		{&CallToolResult{}, `{"resultType":"complete","content":[]}`},
		{ListToolsResult{}, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`},
		{ReadResourceResult{}, `{"resultType":"complete","contents":[],"ttlMs":0,"cacheScope":"private"}`},
		{DiscoverResult{}, `{"resultType":"complete","supportedVersions":[],"capabilities":{},"ttlMs":0,"cacheScope":"private"}`},
		{CompleteResult{}, `{"resultType":"complete","completion":{"values":[],"hasMore":false}}`},
		{InputRequiredResult{}, `{"resultType":"input_required"}`},
		{EmptyResult{}, `{"resultType":"complete"}`},
		{CreateTaskResult{}, `{"resultType":"task","taskId":"","status":"","createdAt":"","lastUpdatedAt":"","ttlMs":null}`},
		{GetTaskResult{}, `{"resultType":"complete","taskId":"","status":"","createdAt":"","lastUpdatedAt":"","ttlMs":null}`},
		{Tool{Name: "t"}, `{"name":"t","inputSchema":{"type":"object"}}`},
		{ListRootsResult{}, `{"roots":[]}`},
		{ListenParams{}, `{"notifications":{}}`},
		{UpdateTaskParams{TaskID: "t"}, `{"taskId":"t","inputResponses":{}}`},
		{TextContent{}, `{"type":"text","text":""}`},
		{ImageContent{}, `{"type":"image","data":"","mimeType":""}`},
		{ToolUseContent{ID: "1", Name: "n"}, `{"type":"tool_use","id":"1","name":"n","input":{}}`},
		{ToolResultContent{ToolUseID: "1"}, `{"type":"tool_result","toolUseId":"1","content":[]}`},
		// An empty open object stays distinct from an absent one.
		{CallToolResult{Meta: Meta{}}, `{"resultType":"complete","content":[],"_meta":{}}`},
		{GetPromptParams{Name: "p", Arguments: map[string]string{}}, `{"name":"p","arguments":{}}`},
		{ElicitResult{Action: ElicitActionAccept, Content: map[string]any{}}, `{"action":"accept","content":{}}`},
	}
	for _, tt := range tests {
		got := string(mustMarshal(t, tt.v))
		if got != tt.want {
			t.Errorf("Marshal(%#v)\n got %s\nwant %s", tt.v, got, tt.want)
		}
	}
}

func TestResourceContents(t *testing.T) {
	tests := []struct {
		in      string
		want    ResourceContents
		wantErr bool
	}{
		{in: `{"uri":"u","text":""}`, want: ResourceContents{URI: "u", Text: ""}},
		{in: `{"uri":"u","mimeType":"text/plain","text":"hi","_meta":{"k":1}}`, want: ResourceContents{URI: "u", MIMEType: "text/plain", Text: "hi", Meta: Meta{"k": float64(1)}}},
		{in: `{"uri":"u","blob":""}`, want: ResourceContents{URI: "u", Blob: []byte{}}},
		{in: `{"uri":"u","blob":"AAEC"}`, want: ResourceContents{URI: "u", Blob: []byte{0, 1, 2}}},
		{in: `{"uri":"u"}`, wantErr: true},
		{in: `{"uri":"u","text":"a","blob":"AA=="}`, wantErr: true},
		{in: `{"uri":"u","blob":"not base64!"}`, wantErr: true},
		{in: `{"uri":"u","blob":"AAE"}`, wantErr: true}, // unpadded
		{in: `[]`, wantErr: true},
	}
	for _, tt := range tests {
		var got ResourceContents
		err := json.Unmarshal([]byte(tt.in), &got)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Unmarshal(%s) = %+v, want error", tt.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Unmarshal(%s): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tt.in, diff)
		}
		if (got.Blob == nil) != (tt.want.Blob == nil) {
			t.Errorf("Unmarshal(%s): Blob nil = %t, want %t", tt.in, got.Blob == nil, tt.want.Blob == nil)
		}
		// Round trip: the same members come back, including "text":"" and
		// "blob":"".
		if diff := cmp.Diff(decodeAny(t, []byte(tt.in)), decodeAny(t, mustMarshal(t, got))); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestUnmarshalContentErrors(t *testing.T) {
	for _, in := range []string{
		`{"text":"no type"}`,
		`{"type":"video","data":""}`,
		`{"type":"image","data":"%%%","mimeType":"image/png"}`,
		`{"type":"audio","data":"AAE","mimeType":"audio/wav"}`,
		`{"type":"tool_result","toolUseId":"1","content":[{"type":"nope"}]}`,
		`{"type":"resource","resource":{"uri":"u"}}`,
		`{"type":7}`,
		`[]`,
		`null`,
	} {
		if c, err := UnmarshalContent([]byte(in)); err == nil {
			t.Errorf("UnmarshalContent(%s) = %#v, want error", in, c)
		}
	}
	var r CallToolResult
	if err := json.Unmarshal([]byte(`{"resultType":"complete","content":[{"type":"image","data":"!"}]}`), &r); err == nil {
		t.Error("CallToolResult with invalid base64 image decoded without error")
	}
}

func TestImageContentData(t *testing.T) {
	c, err := UnmarshalContent([]byte(`{"type":"image","data":"AAEC/w==","mimeType":"image/png"}`))
	if err != nil {
		t.Fatal(err)
	}
	img := c.(*ImageContent)
	if !bytes.Equal(img.Data, []byte{0, 1, 2, 255}) {
		t.Errorf("Data = %v", img.Data)
	}
	if got := string(mustMarshal(t, img)); got != `{"type":"image","data":"AAEC/w==","mimeType":"image/png"}` {
		t.Errorf("Marshal = %s", got)
	}
}

func TestSamplingContentShape(t *testing.T) {
	one := SamplingMessage{Role: RoleUser, Content: []Content{&TextContent{Text: "a"}}}
	if got, want := string(mustMarshal(t, one)), `{"role":"user","content":{"type":"text","text":"a"}}`; got != want {
		t.Errorf("one block: got %s, want %s", got, want)
	}
	two := SamplingMessage{Role: RoleUser, Content: []Content{&TextContent{Text: "a"}, &TextContent{Text: "b"}}}
	if got := string(mustMarshal(t, two)); !strings.Contains(got, `"content":[{`) {
		t.Errorf("two blocks: got %s, want an array", got)
	}
	none := SamplingMessage{Role: RoleUser}
	if got := string(mustMarshal(t, none)); !strings.Contains(got, `"content":[]`) {
		t.Errorf("no blocks: got %s, want []", got)
	}
	for _, in := range []string{`{"role":"user","content":{"type":"text","text":"a"}}`, `{"role":"user","content":[{"type":"text","text":"a"}]}`} {
		var m SamplingMessage
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 1 || m.Content[0].(*TextContent).Text != "a" {
			t.Errorf("Unmarshal(%s) = %+v", in, m)
		}
	}
}

func TestElicitMode(t *testing.T) {
	tests := []struct {
		req     *InputRequest
		want    string
		wantErr bool
	}{
		{req: NewElicitFormRequest("m", json.RawMessage(`{"type":"object","properties":{}}`)), want: ElicitModeForm},
		{req: NewElicitURLRequest("m", "https://x"), want: ElicitModeURL},
		{req: &InputRequest{Method: MethodElicitationCreate, Params: json.RawMessage(`{"message":"m","requestedSchema":{}}`)}, want: ElicitModeForm},
		{req: &InputRequest{Method: MethodElicitationCreate, Params: json.RawMessage(`{"mode":"sms"}`)}, wantErr: true},
		{req: &InputRequest{Method: MethodElicitationCreate, Params: json.RawMessage(`{"mode":""}`)}, wantErr: true},
		{req: &InputRequest{Method: MethodElicitationCreate, Params: json.RawMessage(`[]`)}, wantErr: true},
		{req: &InputRequest{Method: MethodElicitationCreate}, wantErr: true},
		{req: &InputRequest{Method: MethodRootsList}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := tt.req.ElicitMode()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ElicitMode(%s %s) = %q, %v; want %q, error %t", tt.req.Method, tt.req.Params, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestNewElicitFormRequestPanicsOnInvalidSchema(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	NewElicitFormRequest("m", json.RawMessage(`{`))
}

func TestTaskStatusTerminal(t *testing.T) {
	for s, want := range map[TaskStatus]bool{
		TaskWorking: false, TaskInputRequired: false,
		TaskCompleted: true, TaskFailed: true, TaskCancelled: true,
		"": false, "unknown": false,
	} {
		if got := s.Terminal(); got != want {
			t.Errorf("%q.Terminal() = %t, want %t", s, got, want)
		}
	}
}

func TestTaskNotificationParamsMeta(t *testing.T) {
	p := TaskNotificationParams{
		DetailedTask: DetailedTask{TaskInfo: TaskInfo{
			TaskID: "t-1", Status: TaskWorking, CreatedAt: "a", LastUpdatedAt: "b",
			Meta: Meta{"task": "x", MetaSubscriptionID: "stale"},
		}},
		Meta: Meta{MetaSubscriptionID: 7},
	}
	got := decodeAny(t, mustMarshal(t, p))
	want := decodeAny(t, []byte(`{"taskId":"t-1","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":null,
		"_meta":{"task":"x","io.modelcontextprotocol/subscriptionId":7}}`))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged _meta (-want +got):\n%s", diff)
	}
	if p.TaskInfo.Meta[MetaSubscriptionID] != "stale" {
		t.Error("MarshalJSON modified the task's Meta")
	}

	in := `{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"taskId":"t-1","status":"completed","createdAt":"a","lastUpdatedAt":"b","ttlMs":3600000,"pollIntervalMs":2000,"result":{"resultType":"complete","content":[]}}`
	var d TaskNotificationParams
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if d.TaskID != "t-1" || d.Status != TaskCompleted || *d.TTLMs != 3600000 || *d.PollIntervalMs != 2000 || d.Result == nil {
		t.Errorf("decoded %+v", d)
	}
	if d.Meta[MetaSubscriptionID] != float64(7) || d.TaskInfo.Meta != nil {
		t.Errorf("decoded meta %v, task meta %v", d.Meta, d.TaskInfo.Meta)
	}
}

func TestGetTaskResultDecode(t *testing.T) {
	in := `{"resultType":"complete","taskId":"t-1","status":"failed","createdAt":"a","lastUpdatedAt":"b","ttlMs":null,
		"statusMessage":"upstream rate limit","error":{"code":-32603,"message":"API rate limit exceeded"}}`
	var r GetTaskResult
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.ResultType != ResultComplete || r.Status != TaskFailed || r.TTLMs != nil || r.Error == nil || r.Error.Code != CodeInternalError {
		t.Errorf("decoded %+v", r)
	}
	if diff := cmp.Diff(decodeAny(t, []byte(in)), decodeAny(t, mustMarshal(t, r))); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestCallToolParamsDecode(t *testing.T) {
	in := `{"name":"build","arguments":{"ref":"main"},"inputResponses":{"k":{"action":"accept","content":{"ok":true}}},"requestState":"s",
		"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"progressToken":5}}`
	var p CallToolParams
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "build" || string(p.Arguments) != `{"ref":"main"}` || p.RequestState != "s" {
		t.Errorf("decoded %+v", p)
	}
	var er ElicitResult
	if err := json.Unmarshal(p.InputResponses["k"], &er); err != nil || er.Action != ElicitActionAccept || er.Content["ok"] != true {
		t.Errorf("input response %s decoded as %+v, %v", p.InputResponses["k"], er, err)
	}
	if p.Meta == nil || p.Meta.ProtocolVersion != LatestProtocolVersion || !p.Meta.ClientCapabilities.SupportsElicitationURL() || string(p.Meta.ProgressToken) != "5" {
		t.Errorf("decoded meta %+v", p.Meta)
	}
}
