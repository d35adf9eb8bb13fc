package task

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/schemacheck"
	"github.com/taskwire/taskwire/mcp"
)

// Canaries planted in every sensitive member; redacted output must contain
// none of them.
const (
	canaryID       = "id-CANARY-1"
	canaryMessage  = "msg-CANARY-2"
	canaryArgument = "arg-CANARY-3"
	canaryEndpoint = "ep-CANARY-4"
	canaryTool     = "tool-CANARY-5"
	canaryResult   = "res-CANARY-6"
	canaryMeta     = "meta-CANARY-7"
)

var canaries = []string{canaryID, canaryMessage, canaryArgument, canaryEndpoint, canaryTool, canaryResult, canaryMeta}

// t0 is a fixed creation time.
var t0 = time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)

// testOrigin returns a valid origin whose tool declares kinds.
func testOrigin(t testing.TB, kinds ...string) Origin {
	t.Helper()
	o, err := NewOrigin(OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion,
		Endpoint:        "main",
		Operation:       mcp.MethodToolsCall,
		Tool:            "report",
		Arguments:       json.RawMessage(`{"q":"x"}`),
		InputKinds:      kinds,
	})
	if err != nil {
		t.Fatalf("NewOrigin: %v", err)
	}
	return o
}

func formRequest() *mcp.InputRequest {
	return mcp.NewElicitFormRequest("Pick one", json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`))
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// validParams returns the members of a valid working task.
func validParams(t testing.TB) Params {
	return Params{
		ID:            "task-1",
		Origin:        testOrigin(t),
		Status:        Working,
		CreatedAt:     t0,
		LastUpdatedAt: t0,
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	reqs := mcp.InputRequests{"a": formRequest()}
	res := textResult("done")
	rpcErr := mcp.NewError(-32603, "boom")
	tests := []struct {
		name    string
		edit    func(p *Params)
		wantErr bool
	}{
		{"working", func(p *Params) {}, false},
		{"working with status message", func(p *Params) { p.StatusMessage = "busy" }, false},
		{"cancelled", func(p *Params) { p.Status = Cancelled }, false},
		{"input_required", func(p *Params) { p.Status, p.InputRequests = InputRequired, reqs }, false},
		{"completed", func(p *Params) { p.Status, p.Result = Completed, res }, false},
		{"completed with a tool error", func(p *Params) {
			p.Status, p.Result = Completed, &mcp.CallToolResult{IsError: true}
		}, false},
		{"failed", func(p *Params) { p.Status, p.Error = Failed, rpcErr }, false},

		// Each status accepts only its own payload.
		{"working with input requests", func(p *Params) { p.InputRequests = reqs }, true},
		{"working with result", func(p *Params) { p.Result = res }, true},
		{"working with error", func(p *Params) { p.Error = rpcErr }, true},
		{"cancelled with input requests", func(p *Params) { p.Status, p.InputRequests = Cancelled, reqs }, true},
		{"cancelled with result", func(p *Params) { p.Status, p.Result = Cancelled, res }, true},
		{"cancelled with error", func(p *Params) { p.Status, p.Error = Cancelled, rpcErr }, true},
		{"input_required without requests", func(p *Params) { p.Status = InputRequired }, true},
		{"input_required with empty requests", func(p *Params) {
			p.Status, p.InputRequests = InputRequired, mcp.InputRequests{}
		}, true},
		{"input_required with result", func(p *Params) {
			p.Status, p.InputRequests, p.Result = InputRequired, reqs, res
		}, true},
		{"input_required with error", func(p *Params) {
			p.Status, p.InputRequests, p.Error = InputRequired, reqs, rpcErr
		}, true},
		{"input_required with empty key", func(p *Params) {
			p.Status, p.InputRequests = InputRequired, mcp.InputRequests{"": formRequest()}
		}, true},
		{"input_required with nil request", func(p *Params) {
			p.Status, p.InputRequests = InputRequired, mcp.InputRequests{"a": nil}
		}, true},
		{"input_required without method", func(p *Params) {
			p.Status, p.InputRequests = InputRequired, mcp.InputRequests{"a": {}}
		}, true},
		{"completed without result", func(p *Params) { p.Status = Completed }, true},
		{"completed with error", func(p *Params) { p.Status, p.Result, p.Error = Completed, res, rpcErr }, true},
		{"completed with input requests", func(p *Params) {
			p.Status, p.Result, p.InputRequests = Completed, res, reqs
		}, true},
		{"failed without error", func(p *Params) { p.Status = Failed }, true},
		{"failed with result", func(p *Params) { p.Status, p.Error, p.Result = Failed, rpcErr, res }, true},
		{"failed with input requests", func(p *Params) {
			p.Status, p.Error, p.InputRequests = Failed, rpcErr, reqs
		}, true},
		{"empty status", func(p *Params) { p.Status = "" }, true},
		{"canceled spelt the US way", func(p *Params) { p.Status = "canceled" }, true},
		{"unknown status", func(p *Params) { p.Status = "paused" }, true},

		{"zero origin", func(p *Params) { p.Origin = Origin{} }, true},

		// Times.
		{"zero createdAt", func(p *Params) { p.CreatedAt = time.Time{} }, true},
		{"zero lastUpdatedAt", func(p *Params) { p.LastUpdatedAt = time.Time{} }, true},
		{"lastUpdatedAt before createdAt", func(p *Params) { p.LastUpdatedAt = t0.Add(-time.Nanosecond) }, true},
		{"lastUpdatedAt after createdAt", func(p *Params) { p.LastUpdatedAt = t0.Add(time.Nanosecond) }, false},
		{"sub-millisecond times", func(p *Params) {
			p.CreatedAt, p.LastUpdatedAt = t0.Add(123456), t0.Add(123457)
		}, false},

		// Durations: zero or positive whole milliseconds.
		{"ttl zero (unlimited)", func(p *Params) { p.TTL = 0 }, false},
		{"ttl 1ms", func(p *Params) { p.TTL = time.Millisecond }, false},
		{"ttl 1h", func(p *Params) { p.TTL = time.Hour }, false},
		{"ttl negative", func(p *Params) { p.TTL = -time.Millisecond }, true},
		{"ttl 1ns", func(p *Params) { p.TTL = time.Nanosecond }, true},
		{"ttl 500µs", func(p *Params) { p.TTL = 500 * time.Microsecond }, true},
		{"ttl 1.5ms", func(p *Params) { p.TTL = 1500 * time.Microsecond }, true},
		{"poll interval zero", func(p *Params) { p.PollInterval = 0 }, false},
		{"poll interval 250ms", func(p *Params) { p.PollInterval = 250 * time.Millisecond }, false},
		{"poll interval negative", func(p *Params) { p.PollInterval = -time.Second }, true},
		{"poll interval 999µs", func(p *Params) { p.PollInterval = 999 * time.Microsecond }, true},
		{"poll interval 1.001s", func(p *Params) { p.PollInterval = time.Second + time.Microsecond }, true},

		// _meta keys whose second label is modelcontextprotocol or mcp.
		{"meta nil", func(p *Params) { p.Meta = nil }, false},
		{"meta empty", func(p *Params) { p.Meta = mcp.Meta{} }, false},
		{"meta com.example/k", func(p *Params) { p.Meta = mcp.Meta{"com.example/k": 1} }, false},
		{"meta without prefix", func(p *Params) { p.Meta = mcp.Meta{"k": 1} }, false},
		{"meta com.example.mcp/k", func(p *Params) { p.Meta = mcp.Meta{"com.example.mcp/k": 1} }, false},
		{"meta mcp/k", func(p *Params) { p.Meta = mcp.Meta{"mcp/k": 1} }, false},
		{"meta related-task", func(p *Params) { p.Meta = mcp.Meta{"io.modelcontextprotocol/related-task": 1} }, true},
		{"meta x.mcp/y", func(p *Params) { p.Meta = mcp.Meta{"x.mcp/y": 1} }, true},
		{"meta dev.mcp/k", func(p *Params) { p.Meta = mcp.Meta{"dev.mcp/k": 1} }, true},
		{"meta org.modelcontextprotocol.api/k", func(p *Params) { p.Meta = mcp.Meta{"org.modelcontextprotocol.api/k": 1} }, true},
		{"meta com.mcp.tools/k", func(p *Params) { p.Meta = mcp.Meta{"com.mcp.tools/k": 1} }, true},
		{"meta reserved among allowed", func(p *Params) {
			p.Meta = mcp.Meta{"com.example/k": 1, "io.modelcontextprotocol/related-task": 2}
		}, true},

		// IDs.
		{"id 128 characters", func(p *Params) { p.ID = strings.Repeat("a", MaxIDLength) }, false},
		{"id visible ASCII", func(p *Params) { p.ID = "A-z_0.9~!:/" }, false},
		{"id empty", func(p *Params) { p.ID = "" }, true},
		{"id 129 characters", func(p *Params) { p.ID = strings.Repeat("a", MaxIDLength+1) }, true},
		{"id with space", func(p *Params) { p.ID = "a b" }, true},
		{"id with CR", func(p *Params) { p.ID = "a\rb" }, true},
		{"id with LF", func(p *Params) { p.ID = "a\nb" }, true},
		{"id with CRLF", func(p *Params) { p.ID = "a\r\nSet-Cookie: x" }, true},
		{"id with tab", func(p *Params) { p.ID = "a\tb" }, true},
		{"id with NUL", func(p *Params) { p.ID = "a\x00b" }, true},
		{"id with DEL", func(p *Params) { p.ID = "a\x7fb" }, true},
		{"id non-ASCII", func(p *Params) { p.ID = "tâche" }, true},
		{"id encoded header value", func(p *Params) { p.ID = "=?base64?dGFzaw==?=" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := validParams(t)
			tt.edit(&p)
			got, err := New(p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New() error = %v, want error %t", err, tt.wantErr)
			}
			if err != nil {
				if !got.IsZero() {
					t.Errorf("New() failed but returned a non-zero Task")
				}
				if p.ID != "" && strings.Contains(err.Error(), p.ID) {
					t.Errorf("New() error %q echoes the ID", err)
				}
				return
			}
			if err := ValidID(p.ID); err != nil {
				t.Errorf("ValidID(%q) = %v after New accepted it", p.ID, err)
			}
			if diff := cmp.Diff(view(Task{p: &p}), view(got)); diff != "" {
				t.Errorf("New() snapshot differs from its params (-want +got):\n%s", diff)
			}
		})
	}
}

// snapshotView is a comparable rendering of a Task.
type snapshotView struct {
	ID, Status, StatusMessage string
	Origin                    string
	CreatedAt, LastUpdatedAt  time.Time
	TTL, PollInterval         time.Duration
	InputRequests             mcp.InputRequests
	Result                    *mcp.CallToolResult
	Error                     *mcp.Error
	Meta                      mcp.Meta
}

func view(t Task) snapshotView {
	return snapshotView{
		ID: t.ID(), Status: string(t.Status()), StatusMessage: t.StatusMessage(),
		Origin:    string(t.Origin().Persisted()),
		CreatedAt: t.CreatedAt(), LastUpdatedAt: t.LastUpdatedAt(),
		TTL: t.TTL(), PollInterval: t.PollInterval(),
		InputRequests: t.InputRequests(), Result: t.Result(), Error: t.Error(), Meta: t.Meta(),
	}
}

func TestZeroTask(t *testing.T) {
	t.Parallel()
	var z Task
	if !z.IsZero() {
		t.Error("Task{}.IsZero() = false")
	}
	if got, err := New(validParams(t)); err != nil || got.IsZero() {
		t.Errorf("New(valid) = %v, %v; want a non-zero Task", got, err)
	}
}

// secretTask returns a task carrying a canary in every sensitive member.
func secretTask(t testing.TB) Task {
	t.Helper()
	o, err := NewOrigin(OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion,
		Endpoint:        canaryEndpoint,
		Operation:       mcp.MethodToolsCall,
		Tool:            canaryTool,
		Arguments:       json.RawMessage(`{"password":"` + canaryArgument + `"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := New(Params{
		ID: canaryID, Origin: o, Status: Completed, StatusMessage: canaryMessage,
		CreatedAt: t0, LastUpdatedAt: t0, Result: textResult(canaryResult),
		Meta: mcp.Meta{"com.example/k": canaryMeta},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestTaskStringRedacts(t *testing.T) {
	t.Parallel()
	tk := secretTask(t)
	o := tk.Origin()
	values := map[string]any{
		"Task":           tk,
		"*Task":          &tk,
		"Origin":         o,
		"*Origin":        &o,
		"[]Task":         []Task{tk},
		"map value":      map[string]Task{"k": tk},
		"exported field": struct{ T Task }{tk},
		"Origin field":   struct{ O Origin }{o},
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			got := fmt.Sprintf(verb, v)
			for _, c := range canaries {
				if strings.Contains(got, c) {
					t.Errorf("Sprintf(%s, %s) = %q contains canary %q", verb, name, got, c)
				}
			}
		}
	}
	if got, want := tk.String(), "task.Task(status=completed)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := tk.GoString(), tk.String(); got != want {
		t.Errorf("GoString() = %q, want %q", got, want)
	}
}

// TestTaskRedactsEverywhere covers verbs and containers where fmt bypasses
// String and GoString.
func TestTaskRedactsEverywhere(t *testing.T) {
	t.Parallel()
	tk := secretTask(t)
	values := map[string]any{
		"%d Task":           tk,
		"%d Origin":         tk.Origin(),
		"unexported field":  struct{ t Task }{tk},
		"unexported origin": struct{ o Origin }{tk.Origin()},
	}
	for name, v := range values {
		for _, verb := range []string{"%d", "%v", "%+v"} {
			got := fmt.Sprintf(verb, v)
			for _, c := range canaries {
				if strings.Contains(got, c) {
					t.Errorf("Sprintf(%s, %s) contains canary %q", verb, name, c)
				}
			}
		}
	}
}

func int64p(n int64) *int64 { return &n }

func TestInfo(t *testing.T) {
	t.Parallel()
	plus2 := time.FixedZone("UTC+2", 2*60*60)
	tests := []struct {
		name     string
		edit     func(p *Params)
		want     mcp.TaskInfo
		wantJSON string
	}{
		{
			name:     "unlimited ttl and no poll interval",
			edit:     func(p *Params) {},
			want:     mcp.TaskInfo{TaskID: "task-1", Status: Working, CreatedAt: "2026-08-01T10:00:00.000Z", LastUpdatedAt: "2026-08-01T10:00:00.000Z"},
			wantJSON: `{"resultType":"task","taskId":"task-1","status":"working","createdAt":"2026-08-01T10:00:00.000Z","lastUpdatedAt":"2026-08-01T10:00:00.000Z","ttlMs":null}`,
		},
		{
			name: "ttl, poll interval and message",
			edit: func(p *Params) {
				p.TTL, p.PollInterval, p.StatusMessage = 90*time.Second, 1500*time.Millisecond, "busy"
			},
			want: mcp.TaskInfo{
				TaskID: "task-1", Status: Working, StatusMessage: "busy",
				CreatedAt: "2026-08-01T10:00:00.000Z", LastUpdatedAt: "2026-08-01T10:00:00.000Z",
				TTLMs: int64p(90000), PollIntervalMs: int64p(1500),
			},
			wantJSON: `{"resultType":"task","taskId":"task-1","status":"working","statusMessage":"busy","createdAt":"2026-08-01T10:00:00.000Z","lastUpdatedAt":"2026-08-01T10:00:00.000Z","ttlMs":90000,"pollIntervalMs":1500}`,
		},
		{
			name: "times in another zone with nanoseconds",
			edit: func(p *Params) {
				p.CreatedAt = time.Date(2026, 8, 1, 12, 0, 0, 123456789, plus2)
				p.LastUpdatedAt = time.Date(2026, 8, 1, 13, 4, 5, 999999999, plus2)
				p.TTL = time.Millisecond
			},
			want: mcp.TaskInfo{
				TaskID: "task-1", Status: Working,
				CreatedAt: "2026-08-01T10:00:00.123Z", LastUpdatedAt: "2026-08-01T11:04:05.999Z",
				TTLMs: int64p(1),
			},
			wantJSON: `{"resultType":"task","taskId":"task-1","status":"working","createdAt":"2026-08-01T10:00:00.123Z","lastUpdatedAt":"2026-08-01T11:04:05.999Z","ttlMs":1}`,
		},
		{
			name: "meta",
			edit: func(p *Params) { p.Meta = mcp.Meta{"com.example/k": "v"} },
			want: mcp.TaskInfo{
				TaskID: "task-1", Status: Working, CreatedAt: "2026-08-01T10:00:00.000Z", LastUpdatedAt: "2026-08-01T10:00:00.000Z",
				Meta: mcp.Meta{"com.example/k": "v"},
			},
			wantJSON: `{"resultType":"task","taskId":"task-1","status":"working","createdAt":"2026-08-01T10:00:00.000Z","lastUpdatedAt":"2026-08-01T10:00:00.000Z","ttlMs":null,"_meta":{"com.example/k":"v"}}`,
		},
	}
	rfc3339Millis := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := validParams(t)
			tt.edit(&p)
			tk, err := New(p)
			if err != nil {
				t.Fatal(err)
			}
			info := tk.Info()
			if diff := cmp.Diff(tt.want, info); diff != "" {
				t.Errorf("Info() (-want +got):\n%s", diff)
			}
			for _, ts := range []string{info.CreatedAt, info.LastUpdatedAt} {
				if !rfc3339Millis.MatchString(ts) {
					t.Errorf("time %q is not RFC 3339 UTC with milliseconds", ts)
				}
				if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
					t.Errorf("time %q does not parse as RFC 3339: %v", ts, err)
				}
			}
			b, err := json.Marshal(mcp.CreateTaskResult{TaskInfo: info})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b); got != tt.wantJSON {
				t.Errorf("CreateTaskResult JSON\n got %s\nwant %s", got, tt.wantJSON)
			}
			if err := schemacheck.ValidateTasks("CreateTaskResult", b); err != nil {
				t.Errorf("CreateTaskResult does not match the schema: %v", err)
			}
		})
	}
}

// detailed renders a snapshot as tasks/get does.
func detailed(t testing.TB, tk Task) mcp.DetailedTask {
	t.Helper()
	d := mcp.DetailedTask{TaskInfo: tk.Info()}
	switch tk.Status() {
	case InputRequired:
		d.InputRequests = tk.InputRequests()
	case Completed:
		b, err := json.Marshal(tk.Result())
		if err != nil {
			t.Fatal(err)
		}
		d.Result = b
	case Failed:
		d.Error = tk.Error()
	}
	return d
}

func TestWireShapesMatchSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		def  string // the status-specific definition
		edit func(p *Params)
	}{
		{"working", "WorkingTask", func(p *Params) { p.StatusMessage = "busy" }},
		{"input_required", "InputRequiredTask", func(p *Params) {
			p.Status = InputRequired
			p.InputRequests = mcp.InputRequests{
				"form":  formRequest(),
				"url":   mcp.NewElicitURLRequest("Sign in", "https://example.com/login"),
				"roots": {Method: mcp.MethodRootsList},
			}
		}},
		{"completed", "CompletedTask", func(p *Params) {
			p.Status, p.Result = Completed, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":3.50}`)}
		}},
		{"completed with a tool error", "CompletedTask", func(p *Params) {
			p.Status, p.Result = Completed, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}
		}},
		{"failed", "FailedTask", func(p *Params) {
			p.Status, p.Error = Failed, &mcp.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`{"k":1}`)}
		}},
		{"cancelled", "CancelledTask", func(p *Params) { p.Status = Cancelled }},
	}
	for _, tt := range tests {
		for _, ttl := range []time.Duration{0, time.Hour} {
			t.Run(fmt.Sprintf("%s ttl %v", tt.name, ttl), func(t *testing.T) {
				t.Parallel()
				p := validParams(t)
				p.TTL, p.PollInterval = ttl, time.Second
				p.LastUpdatedAt = p.CreatedAt.Add(1234 * time.Millisecond)
				p.Meta = mcp.Meta{"com.example/k": "v"}
				tt.edit(&p)
				tk, err := New(p)
				if err != nil {
					t.Fatal(err)
				}
				d := detailed(t, tk)
				b, err := json.Marshal(mcp.GetTaskResult{DetailedTask: d})
				if err != nil {
					t.Fatal(err)
				}
				for _, def := range []string{"GetTaskResult", "DetailedTask", tt.def} {
					if err := schemacheck.ValidateTasks(def, b); err != nil {
						t.Errorf("%s: %s\n%v", def, b, err)
					}
				}
				info, err := json.Marshal(tk.Info())
				if err != nil {
					t.Fatal(err)
				}
				if err := schemacheck.ValidateTasks("Task", info); err != nil {
					t.Errorf("Task: %s\n%v", info, err)
				}
				if strings.Contains(string(info), `"result"`) || strings.Contains(string(info), `"error"`) {
					t.Errorf("Info() carries a status payload: %s", info)
				}
				cb, err := json.Marshal(mcp.CreateTaskResult{TaskInfo: tk.Info()})
				if err != nil {
					t.Fatal(err)
				}
				if err := schemacheck.ValidateTasks("CreateTaskResult", cb); err != nil {
					t.Errorf("CreateTaskResult: %s\n%v", cb, err)
				}
			})
		}
	}
}

func TestSnapshotImmutable(t *testing.T) {
	t.Parallel()
	reqs := mcp.InputRequests{"a": formRequest()}
	meta := mcp.Meta{"com.example/k": "v"}
	p := validParams(t)
	p.Status, p.InputRequests, p.Meta = InputRequired, reqs, meta
	tk, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	want := view(tk)

	// The caller's maps are copied by New.
	reqs["b"] = formRequest()
	delete(reqs, "a")
	meta["com.example/other"] = 1
	// Maps returned by accessors are copies.
	tk.InputRequests()["c"] = formRequest()
	delete(tk.InputRequests(), "a")
	tk.Meta()["com.example/k"] = "changed"
	q := tk.Params()
	q.InputRequests["d"] = formRequest()
	delete(q.InputRequests, "a")
	q.Meta["com.example/k"] = "changed"
	q.ID, q.Status, q.StatusMessage = "other", Working, "changed"

	if diff := cmp.Diff(want, view(tk)); diff != "" {
		t.Errorf("snapshot changed (-before +after):\n%s", diff)
	}

	// Params round-trips through New.
	again, err := New(tk.Params())
	if err != nil {
		t.Fatalf("New(t.Params()) = %v", err)
	}
	if diff := cmp.Diff(view(tk), view(again)); diff != "" {
		t.Errorf("New(t.Params()) differs (-want +got):\n%s", diff)
	}
}

func TestInfoMetaIsACopy(t *testing.T) {
	t.Parallel()
	p := validParams(t)
	p.Meta = mcp.Meta{"com.example/k": "v"}
	tk, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	tk.Info().Meta["com.example/k"] = "changed"
	if diff := cmp.Diff(mcp.Meta{"com.example/k": "v"}, tk.Meta()); diff != "" {
		t.Errorf("Meta() after mutating Info().Meta (-want +got):\n%s", diff)
	}
}
