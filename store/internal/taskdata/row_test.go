package taskdata

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

func testOrigin(t *testing.T) task.Origin {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "v", Endpoint: "e", Operation: "tools/call", Tool: "t",
		Arguments: json.RawMessage(`{"n": 1.50}`)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func ptr(f float64) *float64 { return &f }

func TestRowSnapshot(t *testing.T) {
	origin := testOrigin(t)
	created := time.UnixMilli(1_790_000_000_000).In(time.FixedZone("x", 3600))
	base := func() Row {
		return Row{ID: "id1", Status: "working", Message: "m", Origin: origin.Persisted(), CreatedAt: created,
			UpdatedAt: created.Add(time.Second), TTLMs: 60_000, PollMs: 500}
	}
	r := base()
	r.Progress, r.ProgressTotal = ptr(2), ptr(4)
	got, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	p := got.Params()
	want := task.Params{ID: "id1", Origin: origin, Status: task.Working, StatusMessage: "m",
		CreatedAt: created.UTC(), LastUpdatedAt: created.Add(time.Second).UTC(), TTL: time.Minute,
		PollInterval: 500 * time.Millisecond, Progress: &task.Progress{Current: 2, Total: 4}}
	if diff := cmp.Diff(want, p, cmp.Comparer(func(a, b task.Origin) bool {
		return string(a.Persisted()) == string(b.Persisted())
	})); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	if p.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %v, want UTC", p.CreatedAt.Location())
	}

	r = base()
	r.Status, r.Requests = "input_required", []byte(`{"k":{"method":"roots/list"}}`)
	if got, err := r.Snapshot(); err != nil || got.InputRequests()["k"] == nil {
		t.Errorf("input_required row: %v, %v", got, err)
	}
	r = base()
	r.Status, r.Error = "failed", []byte(`{"code":-32603,"message":"Internal error"}`)
	if got, err := r.Snapshot(); err != nil || got.Error().Code != -32603 {
		t.Errorf("failed row: %v, %v", got, err)
	}

	for _, tc := range []struct {
		name string
		edit func(*Row)
		want string
	}{
		{"bad origin", func(r *Row) { r.Origin = []byte("x") }, "task origin"},
		{"bad requests", func(r *Row) { r.Status, r.Requests = "input_required", []byte("{") }, "input requests column"},
		{"bad result", func(r *Row) { r.Status, r.Result = "completed", []byte("[") }, "result column"},
		{"bad error", func(r *Row) { r.Status, r.Error = "failed", []byte("1") }, "error column"},
		{"invalid task", func(r *Row) { r.Status = "nonsense" }, "stored task is invalid"},
	} {
		r := base()
		tc.edit(&r)
		if _, err := r.Snapshot(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func TestStoredProgress(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cur, total *float64
		want       *task.Progress
	}{
		{"none", nil, nil, nil},
		{"count", ptr(3), nil, &task.Progress{Current: 3}},
		{"with total", ptr(3), ptr(10), &task.Progress{Current: 3, Total: 10}},
		{"total without count", nil, ptr(10), nil},
		{"negative", ptr(-1), nil, nil},
	} {
		if diff := cmp.Diff(tc.want, StoredProgress(tc.cur, tc.total)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestAccept(t *testing.T) {
	form := mcp.NewElicitFormRequest("Proceed?", json.RawMessage(
		`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
	roots := &mcp.InputRequest{Method: mcp.MethodRootsList}
	reqJSON := func(reqs mcp.InputRequests) []byte {
		b, err := EncodeJSON(reqs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	two := reqJSON(mcp.InputRequests{"a": form, "b": roots})
	accept := json.RawMessage("{ \"action\": \"accept\", \"content\": {\"ok\": true} }")
	for _, tc := range []struct {
		name          string
		reqs, earlier []byte
		responses     mcp.InputResponses
		changed, done bool
		outstanding   []string // keys left
		accepted      string   // the input_responses column
	}{
		{name: "one of two answered", reqs: two, responses: mcp.InputResponses{"a": accept},
			changed: true, outstanding: []string{"b"}, accepted: `{"a":` + string(accept) + `}`},
		{name: "all answered, earlier answers kept", reqs: reqJSON(mcp.InputRequests{"b": roots}),
			earlier: []byte(`{"a":{"action":"decline"}}`), responses: mcp.InputResponses{"b": json.RawMessage(`{"roots":[]}`)},
			changed: true, done: true, accepted: `{"a":{"action":"decline"},"b":{"roots":[]}}`},
		{name: "unknown key", reqs: two, responses: mcp.InputResponses{"c": accept}},
		{name: "answered before (no longer outstanding)", reqs: reqJSON(mcp.InputRequests{"b": roots}),
			earlier: []byte(`{"a":{"action":"decline"}}`), responses: mcp.InputResponses{"a": accept}},
		{name: "wrong variant", reqs: two, responses: mcp.InputResponses{"a": json.RawMessage(`{"roots":[]}`)}},
		{name: "does not match the form", reqs: two,
			responses: mcp.InputResponses{"a": json.RawMessage(`{"action":"accept","content":{"ok":"yes"}}`)}},
		{name: "not JSON", reqs: two, responses: mcp.InputResponses{"b": json.RawMessage(`{"roots":[]`)}},
		{name: "nothing outstanding", responses: mcp.InputResponses{"a": accept}},
		{name: "mixed: the matching one counts", reqs: two,
			responses: mcp.InputResponses{"a": json.RawMessage(`{}`), "b": json.RawMessage(`{"roots":[]}`), "z": accept},
			changed:   true, outstanding: []string{"a"}, accepted: `{"b":{"roots":[]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, changed, err := Accept(tc.reqs, tc.earlier, tc.responses)
			if err != nil || changed != tc.changed {
				t.Fatalf("Accept: changed %v, err %v; want changed %v", changed, err, tc.changed)
			}
			if !changed {
				if diff := cmp.Diff(Answered{}, a); diff != "" {
					t.Errorf("unchanged Answered (-want +got):\n%s", diff)
				}
				return
			}
			left, err := DecodeRequests(a.Requests)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range left {
				keys = append(keys, k)
			}
			if diff := cmp.Diff(tc.outstanding, keys); diff != "" {
				t.Errorf("outstanding (-want +got):\n%s", diff)
			}
			if len(tc.outstanding) == 0 && a.Requests != nil {
				t.Errorf("requests column %s, want NULL", a.Requests)
			}
			if string(a.Responses) != tc.accepted || a.Done != tc.done {
				t.Errorf("responses %s done %v, want %s done %v", a.Responses, a.Done, tc.accepted, tc.done)
			}
		})
	}
	if _, _, err := Accept([]byte("{"), nil, mcp.InputResponses{"a": accept}); err == nil {
		t.Error("an undecodable requests column was accepted")
	}
	if _, _, err := Accept(two, []byte("["), mcp.InputResponses{"a": accept}); err == nil {
		t.Error("an undecodable responses column was accepted")
	}
}

func TestDecodeClaim(t *testing.T) {
	origin := testOrigin(t)
	var j backend.JobRow
	if err := DecodeClaim(&j, origin.Persisted(), []byte(`{"a": {"roots": []}}`)); err != nil {
		t.Fatal(err)
	}
	if string(j.Origin.Persisted()) != string(origin.Persisted()) || string(j.Responses["a"]) != `{"roots": []}` {
		t.Errorf("DecodeClaim: origin %s, responses %v", j.Origin.Persisted(), j.Responses)
	}
	for _, tc := range []struct{ origin, responses []byte }{
		{[]byte("x"), nil},
		{origin.Persisted(), []byte("[")},
	} {
		var j backend.JobRow
		if err := DecodeClaim(&j, tc.origin, tc.responses); err == nil || !j.Origin.IsZero() {
			t.Errorf("DecodeClaim(%q, %q) = %v, origin set %v", tc.origin, tc.responses, err, !j.Origin.IsZero())
		}
	}
}

func TestStoredErrors(t *testing.T) {
	for _, tc := range []struct {
		got  []byte
		want *mcp.Error
	}{
		{ExhaustedJSON(), backend.ExhaustedError()},
		{InternalErrorJSON(), mcp.InternalError()},
	} {
		e, err := DecodeError(tc.got)
		if err != nil || e.Code != tc.want.Code || e.Message != tc.want.Message {
			t.Errorf("stored error %s: %v, %v; want %v", tc.got, e, err, tc.want)
		}
	}
	ExhaustedJSON()[0] = 'x'
	if ExhaustedJSON()[0] != '{' {
		t.Error("ExhaustedJSON returned shared bytes")
	}
}

func TestCompletionJSON(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}
	want, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    backend.Completion
		want string // the JSON, or the error it wraps
		err  error
	}{
		{"result", backend.Completion{Result: res, Progress: &task.Progress{Current: 1, Total: 2}}, string(want), nil},
		{"encoded already", backend.Completion{Result: res, ResultJSON: []byte(`{"content":[]}`)}, `{"content":[]}`, nil},
		{"NaN progress", backend.Completion{Result: res, Progress: &task.Progress{Current: math.NaN()}}, "",
			backend.ErrInvalidProgress},
		{"negative total", backend.Completion{Result: res, Progress: &task.Progress{Current: 1, Total: -1}}, "",
			backend.ErrInvalidProgress},
		{"NUL in the message", backend.Completion{Result: res, Message: "a\x00"}, "", backend.ErrInvalidText},
	} {
		b, err := CompletionJSON(tc.c)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: %s, %v; want %v", tc.name, b, err, tc.err)
			}
			continue
		}
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, b, err, tc.want)
		}
	}
	if _, err := CompletionJSON(backend.Completion{}); err == nil {
		t.Error("a completion without a result was accepted")
	}
}
