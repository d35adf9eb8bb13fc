package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// TestRawTool: a raw durable tool validates its raw arguments on the API
// node, takes its key from the declared property, and its handler's
// result completes the task.
func TestRawTool(t *testing.T) {
	var s durable.Set
	durable.AddRaw(&s, durable.RawTool{
		Tool: &mcp.Tool{Name: "echo", InputSchema: rawSchema},
		Run: func(_ context.Context, job *worker.Job) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(job.Arguments())}}}, nil
		},
		Validate: func(args json.RawMessage) error {
			var in struct{ N int }
			if err := json.Unmarshal(args, &in); err != nil || in.N > 9 {
				return errors.New("n must be at most 9")
			}
			return nil
		},
		TaskOptions: durable.TaskOptions{IdempotencyKey: "key"},
	})
	r := newRig(t, openSQLite(t), &s, &s)

	if got := errorText(t, r.call(t, "echo", map[string]any{"n": 10}).Result); got != "n must be at most 9" {
		t.Errorf("Validate: text = %q", got)
	}
	id := r.create(t, "echo", map[string]any{"n": 1, "key": "k"})
	if again := r.create(t, "echo", map[string]any{"n": 1, "key": "k"}); again != id {
		t.Errorf("retry with the same key: task %s, want %s", again, id)
	}
	got := r.awaitEnd(t, id)
	res := decodeResult(t, got.Result)
	if got.Status != mcp.TaskCompleted || len(res.Content) != 1 || res.Content[0].Text != `{"key":"k","n":1}` {
		t.Errorf("status %s, result %s", got.Status, got.Result)
	}
}
