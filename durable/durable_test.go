package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/worker"
)

type sumIn struct {
	A   int    `json:"a"`
	B   int    `json:"b"`
	Key string `json:"key,omitempty"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

type otherOut struct {
	Total int `json:"total"`
}

func nonNegative(in sumIn) error {
	if in.A < 0 || in.B < 0 {
		return errors.New("a and b must not be negative")
	}
	return nil
}

func add(_ context.Context, _ *worker.Job, in sumIn) (sumOut, error) {
	return sumOut{Sum: in.A + in.B}, nil
}

// sumTool is the typed tool of most tests.
func sumTool() durable.Tool[sumIn, sumOut] {
	return durable.Tool[sumIn, sumOut]{
		Tool:        &mcp.Tool{Name: "sum", Description: "Add two numbers, durably."},
		Run:         add,
		Validate:    nonNegative,
		TaskOptions: durable.TaskOptions{IdempotencyKey: "key"},
	}
}

// toolResult is the part of a tool result the tests compare.
type toolResult struct {
	IsError           bool            `json:"isError,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	Content           []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func decodeResult(t *testing.T, raw json.RawMessage) toolResult {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

// errorText returns the text of a tools/call answered with a tool error.
func errorText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	r := decodeResult(t, raw)
	if !r.IsError || len(r.Content) != 1 {
		t.Fatalf("want a tool error, got %s", raw)
	}
	return r.Content[0].Text
}

// TestEndToEnd creates a task of a typed durable tool through tools/call
// over HTTP and lets the worker complete it from the real SQLite store.
func TestEndToEnd(t *testing.T) {
	var s durable.Set
	durable.Add(&s, sumTool())
	r := newRig(t, openSQLite(t), &s, &s)

	// tools/list shows the schemas inferred from In and Out.
	resp, err := r.client.Call(context.Background(), mcp.MethodToolsList, nil)
	if err != nil {
		t.Fatal(err)
	}
	var list mcp.ListToolsResult
	if err := resp.DecodeResult(&list); err != nil || len(list.Tools) != 1 {
		t.Fatalf("tools/list: %v %s", err, resp.Body)
	}
	var schemas struct {
		In  map[string]any `json:"in"`
		Out map[string]any `json:"out"`
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"in": list.Tools[0].InputSchema, "out": list.Tools[0].OutputSchema})
	if err := json.Unmarshal(b, &schemas); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "key"}, sortedKeys(schemas.In["properties"])); diff != "" {
		t.Errorf("input schema properties (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sum"}, sortedKeys(schemas.Out["properties"])); diff != "" {
		t.Errorf("output schema properties (-want +got):\n%s", diff)
	}

	id := r.create(t, "sum", map[string]any{"a": 2, "b": 3})
	got := r.awaitEnd(t, id)
	if got.Status != mcp.TaskCompleted {
		t.Fatalf("status %s, error %v", got.Status, got.Error)
	}
	res := decodeResult(t, got.Result)
	if res.IsError || string(res.StructuredContent) != `{"sum":5}` {
		t.Errorf("result = %s, want structuredContent {\"sum\":5}", got.Result)
	}
}

func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

// TestValidateOnAPINode: a Validate error is a tool error the model reads,
// and no task is created.
func TestValidateOnAPINode(t *testing.T) {
	var s durable.Set
	durable.Add(&s, sumTool())
	st := openSQLite(t)
	r := newRig(t, st, &s, nil)
	resp := r.call(t, "sum", map[string]any{"a": -1, "b": 3})
	if got := errorText(t, resp.Result); got != "a and b must not be negative" {
		t.Errorf("text = %q", got)
	}
	if strings.Contains(string(resp.Result), `"taskId"`) {
		t.Errorf("a task was created: %s", resp.Result)
	}
}

// TestValidateOnWorker: an API node that does not validate (an older
// release, say) creates the task; the worker's Validate completes it as a
// tool error without running the handler.
func TestValidateOnWorker(t *testing.T) {
	var api, work durable.Set
	durable.Declare(&api, durable.ToolDecl[sumIn, sumOut]{Tool: &mcp.Tool{Name: "sum"}, TaskOptions: durable.TaskOptions{IdempotencyKey: "key"}})
	ran := make(chan struct{}, 1)
	durable.Declare(&work, durable.ToolDecl[sumIn, sumOut]{Tool: &mcp.Tool{Name: "sum"}, Validate: nonNegative, TaskOptions: durable.TaskOptions{IdempotencyKey: "key"}})
	durable.Implement(&work, "sum", func(ctx context.Context, job *worker.Job, in sumIn) (sumOut, error) {
		ran <- struct{}{}
		return add(ctx, job, in)
	})
	r := newRig(t, openSQLite(t), &api, &work)

	got := r.awaitEnd(t, r.create(t, "sum", map[string]any{"a": -1, "b": 3}))
	if got.Status != mcp.TaskCompleted {
		t.Fatalf("status %s, error %v", got.Status, got.Error)
	}
	if text := errorText(t, got.Result); text != "a and b must not be negative" {
		t.Errorf("text = %q", text)
	}
	select {
	case <-ran:
		t.Error("the handler ran although Validate failed")
	default:
	}
}

// TestIdempotencyKey: the declared field is the key; the same key and
// arguments return the same task, other arguments a tool error.
func TestIdempotencyKey(t *testing.T) {
	var s durable.Set
	durable.Add(&s, sumTool())
	r := newRig(t, openSQLite(t), &s, nil)

	first := r.create(t, "sum", map[string]any{"a": 1, "b": 2, "key": "k1"})
	if again := r.create(t, "sum", map[string]any{"a": 1, "b": 2, "key": "k1"}); again != first {
		t.Errorf("retry with the same key: task %s, want %s", again, first)
	}
	if other := r.create(t, "sum", map[string]any{"a": 1, "b": 2, "key": "k2"}); other == first {
		t.Error("another key returned the same task")
	}
	if other := r.create(t, "sum", map[string]any{"a": 1, "b": 2}); other == first {
		t.Error("no key returned the same task")
	}
	resp := r.call(t, "sum", map[string]any{"a": 1, "b": 5, "key": "k1"})
	want := "key was already used with different arguments: repeat the original arguments to get the original task, or use a new key"
	if got := errorText(t, resp.Result); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}

	// A key the store cannot keep (backend.ErrInvalidText).
	resp = r.call(t, "sum", map[string]any{"a": 1, "b": 2, "key": "k\x00"})
	want = "the call cannot be stored as a task: the arguments, key and the caller's name must be valid UTF-8 without NUL characters"
	if got := errorText(t, resp.Result); got != want {
		t.Errorf("invalid key: text = %q, want %q", got, want)
	}
}

// TestEnqueueFailure: a store that fails the Enqueue makes the call
// -32603 "Internal error"; the cause is in the server's log, without the
// call's arguments. The failing store is a second SQLite store, closed,
// so that the server's own task manager keeps working.
func TestEnqueueFailure(t *testing.T) {
	var s durable.Set
	durable.Add(&s, sumTool())
	broken := openSQLite(t)
	if err := broken.Close(); err != nil {
		t.Fatal(err)
	}
	r := newRigEnqueuer(t, openSQLite(t), broken, &s, nil)
	const canary = "canary-7d1f"
	resp := r.call(t, "sum", map[string]any{"a": 1, "b": 2, "key": canary})
	checkInternalError(t, resp, r.logs.String(), canary, "database is closed")
}

// checkInternalError checks a tools/call answered with the fixed internal
// error, and a log that names the failed creation and its cause but not
// the canary argument.
func checkInternalError(t *testing.T, resp *mcptest.Response, logs, canary, cause string) {
	t.Helper()
	if diff := cmp.Diff(&mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error"}, resp.Error); diff != "" {
		t.Errorf("error (-want +got):\n%s\nbody %s", diff, resp.Body)
	}
	for _, want := range []string{`msg="task creation failed"`, `tool=sum`, `durable: tool \"sum\": enqueue:`, cause} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, canary) {
		t.Errorf("log has the argument %q:\n%s", canary, logs)
	}
}
