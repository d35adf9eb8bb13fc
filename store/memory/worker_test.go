package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func formRequest() *mcp.InputRequest {
	return mcp.NewElicitFormRequest("How much?", json.RawMessage(`{"type":"object","properties":{"price":{"type":"number"}}}`))
}

func urlRequest() *mcp.InputRequest {
	return mcp.NewElicitURLRequest("Sign in", "https://example.com/login")
}

func samplingRequest() *mcp.InputRequest {
	return &mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage, Params: json.RawMessage(
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`)}
}

func rootsRequest() *mcp.InputRequest { return &mcp.InputRequest{Method: mcp.MethodRootsList} }

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Answers, spelt as a client sent them.
var (
	acceptForm     = json.RawMessage(`{"action":"accept","content":{"price":3.50}}`)
	acceptURL      = json.RawMessage(`{"action":"accept"}`)
	samplingAnswer = json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m-1"}`)
	rootsAnswer    = json.RawMessage(`{"roots":[{"uri":"file:///work"}]}`)
)

// terminalOps runs every worker transition on id and returns the errors.
func terminalOps(m *memory.Manager, id string) map[string]error {
	errs := map[string]error{}
	_, errs["MarkWorking"] = m.MarkWorking(id, "late")
	_, errs["RequestInput"] = m.RequestInput(id, mcp.InputRequests{"late": formRequest()}, "late")
	_, errs["Complete"] = m.Complete(id, textResult("late"), "late")
	_, errs["Fail"] = m.Fail(id, mcp.NewError(-32603, "late"), "late")
	_, errs["Cancel"] = m.Cancel(id, "late")
	return errs
}

func TestUpdateTaskResponses(t *testing.T) {
	t.Parallel()
	all := []string{"form", "roots", "sampling", "url"}
	tests := []struct {
		name          string
		responses     mcp.InputResponses
		wantAccepted  mcp.InputResponses
		wantRemaining []string
	}{
		{"one of four", mcp.InputResponses{"form": acceptForm},
			mcp.InputResponses{"form": acceptForm}, []string{"roots", "sampling", "url"}},
		{"two of four", mcp.InputResponses{"sampling": samplingAnswer, "roots": rootsAnswer},
			mcp.InputResponses{"sampling": samplingAnswer, "roots": rootsAnswer}, []string{"form", "url"}},
		{"all four", mcp.InputResponses{"form": acceptForm, "url": acceptURL, "sampling": samplingAnswer, "roots": rootsAnswer},
			mcp.InputResponses{"form": acceptForm, "url": acceptURL, "sampling": samplingAnswer, "roots": rootsAnswer}, nil},
		{"decline and cancel", mcp.InputResponses{"form": json.RawMessage(`{"action":"decline"}`), "url": json.RawMessage(`{"action":"cancel"}`)},
			mcp.InputResponses{"form": json.RawMessage(`{"action":"decline"}`), "url": json.RawMessage(`{"action":"cancel"}`)}, []string{"roots", "sampling"}},
		{"empty roots", mcp.InputResponses{"roots": json.RawMessage(`{"roots":[]}`)},
			mcp.InputResponses{"roots": json.RawMessage(`{"roots":[]}`)}, []string{"form", "sampling", "url"}},
		{"nil responses", nil, nil, all},
		{"empty responses", mcp.InputResponses{}, nil, all},
		{"unknown key", mcp.InputResponses{"nope": acceptForm, "": acceptForm}, nil, all},
		{"key with different case", mcp.InputResponses{"Form": acceptForm}, nil, all},
		{"sampling answer to an elicitation", mcp.InputResponses{"form": samplingAnswer}, nil, all},
		{"roots answer to an elicitation", mcp.InputResponses{"url": rootsAnswer}, nil, all},
		{"elicitation answer to sampling", mcp.InputResponses{"sampling": acceptForm}, nil, all},
		{"elicitation answer to roots", mcp.InputResponses{"roots": acceptURL}, nil, all},
		{"invalid action", mcp.InputResponses{"form": json.RawMessage(`{"action":"maybe"}`)}, nil, all},
		{"action with different case", mcp.InputResponses{"form": json.RawMessage(`{"action":"ACCEPT"}`)}, nil, all},
		{"no action", mcp.InputResponses{"form": json.RawMessage(`{"content":{"price":1}}`)}, nil, all},
		{"content not an object", mcp.InputResponses{"form": json.RawMessage(`{"action":"accept","content":"x"}`)}, nil, all},
		{"sampling answer without model", mcp.InputResponses{"sampling": json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"x"}}`)}, nil, all},
		{"sampling answer without content", mcp.InputResponses{"sampling": json.RawMessage(`{"role":"assistant","model":"m"}`)}, nil, all},
		{"roots null", mcp.InputResponses{"roots": json.RawMessage(`{"roots":null}`)}, nil, all},
		{"roots missing", mcp.InputResponses{"roots": json.RawMessage(`{}`)}, nil, all},
		{"not JSON", mcp.InputResponses{"form": json.RawMessage(`{"action":`)}, nil, all},
		{"JSON null", mcp.InputResponses{"form": json.RawMessage(`null`), "roots": json.RawMessage(`null`)}, nil, all},
		{"JSON array", mcp.InputResponses{"form": json.RawMessage(`[]`)}, nil, all},
		{"mixed", mcp.InputResponses{"form": acceptForm, "url": samplingAnswer, "nope": acceptURL, "roots": json.RawMessage(`{"roots":"x"}`)},
			mcp.InputResponses{"form": acceptForm}, []string{"roots", "sampling", "url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, c := newManager(t, memory.Options{})
			id := create(t, m).ID()
			reqs := mcp.InputRequests{"form": formRequest(), "url": urlRequest(), "sampling": samplingRequest(), "roots": rootsRequest()}
			before, err := m.RequestInput(id, reqs, "answer please")
			if err != nil {
				t.Fatal(err)
			}
			h := subscribe(t, m)
			c.Advance(time.Second)
			if err := m.UpdateTask(context.Background(), update(id, tt.responses)); err != nil {
				t.Fatalf("UpdateTask() = %v", err)
			}
			after := find(t, m, id)

			want := view(before)
			if len(tt.wantAccepted) > 0 {
				want.LastUpdatedAt = t0.Add(time.Second)
				want.InputRequests = mcp.InputRequests{}
				for _, k := range tt.wantRemaining {
					want.InputRequests[k] = reqs[k]
				}
				if len(tt.wantRemaining) == 0 {
					want.Status, want.StatusMessage, want.InputRequests = string(task.Working), "", nil
				}
			}
			if diff := cmp.Diff(want, view(after)); diff != "" {
				t.Errorf("task after UpdateTask (-want +got):\n%s", diff)
			}
			got, err := m.TakeInputResponses(id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantAccepted, got); diff != "" {
				t.Errorf("TakeInputResponses() (-want +got):\n%s", diff)
			}
			ids, _ := h.take()
			if wantHints := len(tt.wantAccepted) > 0; (len(ids) == 1) != wantHints || len(ids) > 1 {
				t.Errorf("hints = %q, want one: %t", ids, wantHints)
			}
		})
	}
}

// TestDecimalAnswerByteExact: a decimal such as 3.50 reaches the worker
// exactly as the client spelt it.
func TestDecimalAnswerByteExact(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	id := create(t, m).ID()
	if _, err := m.RequestInput(id, mcp.InputRequests{"price": formRequest()}, ""); err != nil {
		t.Fatal(err)
	}
	answer := []byte("{ \"action\" : \"accept\",\n \"content\": {\"price\": 3.50, \"qty\": 1e0, \"big\": 12345678901234567890123, \"note\": \"\\u00e9\\/\"} }")
	sent := slices.Clone(answer)
	if err := m.UpdateTask(context.Background(), update(id, mcp.InputResponses{"price": sent})); err != nil {
		t.Fatal(err)
	}
	sent[0] = 'X' // the manager keeps its own copy
	got, err := m.TakeInputResponses(id)
	if err != nil {
		t.Fatal(err)
	}
	if string(got["price"]) != string(answer) {
		t.Errorf("answer\n got %s\nwant %s", got["price"], answer)
	}
}

func TestUpdateTaskAcceptsEachKeyOnce(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	ctx := context.Background()
	id := create(t, m).ID()
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": formRequest()}, ""); err != nil {
		t.Fatal(err)
	}
	decline := json.RawMessage(`{"action":"decline"}`)
	steps := []struct {
		name      string
		responses mcp.InputResponses
		take      bool
		want      mcp.InputResponses // taken when take is set
	}{
		{"first answer", mcp.InputResponses{"a": decline}, false, nil},
		{"answered again before take", mcp.InputResponses{"a": acceptForm}, true, mcp.InputResponses{"a": decline}},
		{"answered again after take", mcp.InputResponses{"a": acceptForm}, true, nil},
		{"the other key", mcp.InputResponses{"a": acceptForm, "b": acceptForm}, true, mcp.InputResponses{"b": acceptForm}},
		{"after all were answered", mcp.InputResponses{"a": acceptForm, "b": decline}, true, nil},
	}
	for _, s := range steps {
		if err := m.UpdateTask(ctx, update(id, s.responses)); err != nil {
			t.Fatalf("%s: UpdateTask() = %v", s.name, err)
		}
		if !s.take {
			continue
		}
		got, err := m.TakeInputResponses(id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: TakeInputResponses() (-want +got):\n%s", s.name, diff)
		}
	}
	if tk := find(t, m, id); tk.Status() != task.Working || len(tk.InputRequests()) != 0 {
		t.Errorf("task = %s with %d requests, want working with none", tk.Status(), len(tk.InputRequests()))
	}
}

func TestTakeInputResponses(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	id := create(t, m).ID()
	if got, err := m.TakeInputResponses(id); err != nil || got != nil {
		t.Errorf("TakeInputResponses() with nothing accepted = %v, %v", got, err)
	}
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.UpdateTask(context.Background(), update(id, mcp.InputResponses{"a": acceptForm})); err != nil {
		t.Fatal(err)
	}
	if got, err := m.TakeInputResponses(id); err != nil || !cmp.Equal(got, mcp.InputResponses{"a": acceptForm}) {
		t.Errorf("first TakeInputResponses() = %s, %v", got, err)
	}
	if got, err := m.TakeInputResponses(id); err != nil || len(got) != 0 {
		t.Errorf("second TakeInputResponses() = %s, %v", got, err)
	}
	if _, err := m.TakeInputResponses("00000000-0000-4000-8000-000000000000"); err != task.ErrNotFound {
		t.Errorf("TakeInputResponses(unknown) = %v", err)
	}
}

func TestSupersededInputIgnored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		supersede func(m *memory.Manager, id string) error
		status    task.Status
	}{
		{"MarkWorking", func(m *memory.Manager, id string) error {
			_, err := m.MarkWorking(id, "moving on")
			return err
		}, task.Working},
		{"RequestInput with new keys", func(m *memory.Manager, id string) error {
			_, err := m.RequestInput(id, mcp.InputRequests{"c": formRequest()}, "")
			return err
		}, task.InputRequired},
		{"Complete", func(m *memory.Manager, id string) error {
			_, err := m.Complete(id, textResult("done"), "")
			return err
		}, task.Completed},
		{"Cancel", func(m *memory.Manager, id string) error {
			_, err := m.Cancel(id, "")
			return err
		}, task.Cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := newManager(t, memory.Options{})
			id := create(t, m).ID()
			if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": urlRequest()}, ""); err != nil {
				t.Fatal(err)
			}
			if err := tt.supersede(m, id); err != nil {
				t.Fatal(err)
			}
			before := view(find(t, m, id))
			if err := m.UpdateTask(context.Background(), update(id, mcp.InputResponses{"a": acceptForm, "b": acceptURL})); err != nil {
				t.Fatalf("UpdateTask() = %v", err)
			}
			if diff := cmp.Diff(before, view(find(t, m, id))); diff != "" {
				t.Errorf("answers to superseded requests changed the task (-before +after):\n%s", diff)
			}
			if got := find(t, m, id).Status(); got != tt.status {
				t.Errorf("status = %s, want %s", got, tt.status)
			}
			if got, _ := m.TakeInputResponses(id); len(got) != 0 {
				t.Errorf("superseded answers were accepted: %s", got)
			}
			// The superseded keys stay used.
			wantErr := memory.ErrKeyReused
			if tt.status.Terminal() {
				wantErr = memory.ErrTerminal
			}
			if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, ""); !errors.Is(err, wantErr) {
				t.Errorf("RequestInput(superseded key) = %v, want %v", err, wantErr)
			}
		})
	}
}

func TestRequestInput(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{})
	ctx := context.Background()
	id := create(t, m).ID()

	if _, err := m.RequestInput(id, nil, ""); err == nil {
		t.Error("RequestInput(no requests) succeeded")
	}
	if _, err := m.RequestInput("00000000-0000-4000-8000-000000000000", mcp.InputRequests{"a": formRequest()}, ""); err != task.ErrNotFound {
		t.Errorf("RequestInput(unknown) = %v", err)
	}
	c.Advance(time.Second)
	first, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": urlRequest()}, "two questions")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcp.InputRequests{"a": formRequest(), "b": urlRequest()}, first.InputRequests()); diff != "" {
		t.Errorf("InputRequests() (-want +got):\n%s", diff)
	}
	if first.Status() != task.InputRequired || first.StatusMessage() != "two questions" || !first.LastUpdatedAt().Equal(t0.Add(time.Second)) {
		t.Errorf("RequestInput() = %s %q at %v", first.Status(), first.StatusMessage(), first.LastUpdatedAt())
	}

	// Repeating exactly the outstanding set is a no-op.
	again, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": urlRequest()}, "two questions")
	if err != nil {
		t.Fatalf("repeating the outstanding set = %v", err)
	}
	if again.Status() != task.InputRequired || !cmp.Equal(again.InputRequests(), first.InputRequests()) {
		t.Errorf("repeating the outstanding set changed it")
	}
	// The same keys with other content, a subset or a superset are reuse.
	for name, reqs := range map[string]mcp.InputRequests{
		"same keys, other content": {"a": urlRequest(), "b": urlRequest()},
		"subset":                   {"a": formRequest()},
		"superset":                 {"a": formRequest(), "b": urlRequest(), "c": formRequest()},
	} {
		if _, err := m.RequestInput(id, reqs, ""); !errors.Is(err, memory.ErrKeyReused) {
			t.Errorf("RequestInput(%s) = %v, want ErrKeyReused", name, err)
		}
	}

	// Accepted but untaken answers block new requests.
	if err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"a": acceptForm})); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RequestInput(id, mcp.InputRequests{"c": formRequest()}, ""); !errors.Is(err, memory.ErrPendingResponses) {
		t.Errorf("RequestInput with untaken answers = %v, want ErrPendingResponses", err)
	}
	if _, err := m.TakeInputResponses(id); err != nil {
		t.Fatal(err)
	}
	// The remaining outstanding set ({b}) is again a no-op; a fails
	// because it was used.
	if tk, err := m.RequestInput(id, mcp.InputRequests{"b": urlRequest()}, "two questions"); err != nil || !cmp.Equal(tk.InputRequests(), mcp.InputRequests{"b": urlRequest()}) {
		t.Errorf("repeating the remaining set = %v", err)
	}
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": urlRequest()}, ""); !errors.Is(err, memory.ErrKeyReused) {
		t.Errorf("RequestInput(answered key) = %v, want ErrKeyReused", err)
	}

	// A failed request consumes none of its new keys.
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "c": formRequest()}, ""); !errors.Is(err, memory.ErrKeyReused) {
		t.Errorf("RequestInput(used and new) = %v, want ErrKeyReused", err)
	}
	tk, err := m.RequestInput(id, mcp.InputRequests{"c": formRequest()}, "third")
	if err != nil {
		t.Fatalf("RequestInput(c) after a failed request naming c = %v", err)
	}
	if !cmp.Equal(tk.InputRequests(), mcp.InputRequests{"c": formRequest()}) {
		t.Errorf("new set replaces the outstanding one: %v", slices.Sorted(maps.Keys(tk.InputRequests())))
	}
}

func TestRequestInputRepeatIsNoOp(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{})
	id := create(t, m).ID()
	first, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, "q")
	if err != nil {
		t.Fatal(err)
	}
	h := subscribe(t, m)
	c.Advance(time.Second)
	again, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, "q")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(view(first), view(again)); diff != "" {
		t.Errorf("no-op RequestInput changed the task (-before +after):\n%s", diff)
	}
	if ids, _ := h.take(); len(ids) != 0 {
		t.Errorf("no-op RequestInput published %q", ids)
	}
}

func TestFailedRequestInputLeavesStateUnchanged(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	id := create(t, m).ID()
	before := view(find(t, m, id))
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": {}}, ""); err == nil {
		t.Fatal("RequestInput with a request without a method succeeded")
	}
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		if err := m.UpdateTask(context.Background(), update(id, mcp.InputResponses{"a": acceptForm})); err != nil {
			t.Errorf("UpdateTask() = %v", err)
		}
	}()
	if panicked != nil {
		// The panic left the manager's mutex locked: any further call
		// would deadlock.
		t.Fatalf("UpdateTask panicked: %v", panicked)
	}
	if diff := cmp.Diff(before, view(find(t, m, id))); diff != "" {
		t.Errorf("task changed (-before +after):\n%s", diff)
	}
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, ""); err != nil {
		t.Errorf("RequestInput(a) after the failed request = %v", err)
	}
}
