package durable_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/worker"
)

// TestIdempotencyReserialised retries idempotent calls over HTTP with the
// arguments written by other serializers (Python's json.dumps puts spaces
// after separators, others order members differently or escape): each
// retry gets the task the first call created, on SQLite and PostgreSQL,
// with nothing logged as an error. Number spellings still count: 1.0 is
// not the 1 of the first call. The task runs with the first call's
// arguments, byte for byte.
func TestIdempotencyReserialised(t *testing.T) {
	for _, bc := range stores {
		t.Run(bc.name, func(t *testing.T) {
			var s durable.Set
			durable.Add(&s, sumTool())
			durable.AddRaw(&s, durable.RawTool{
				Tool: &mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"},"n":{"type":"number"}}}`)},
				Run: func(_ context.Context, job *worker.Job) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(job.Arguments())}}}, nil
				},
				TaskOptions: durable.TaskOptions{IdempotencyKey: "key"},
			})
			r := newRig(t, bc.open(t), &s, &s)
			conflict := "key was already used with different arguments: repeat the original arguments to get the original task, or use a new key"

			first := taskOf(t, r.callRaw(t, "sum", `{"a":1,"b":2,"key":"k1"}`))
			for _, tc := range []struct{ name, args string }{
				{"json.dumps", `{"a": 1, "b": 2, "key": "k1"}`},
				{"json.dumps indent", "{\n  \"a\": 1,\n  \"b\": 2,\n  \"key\": \"k1\"\n}"},
				{"other member order", `{"key":"k1","b":2,"a":1}`},
				{"escaped", `{"a":1,"b":2,"\u006bey":"\u006b1"}`},
			} {
				if got := taskOf(t, r.callRaw(t, "sum", tc.args)); got != first {
					t.Errorf("%s: task %s, want %s", tc.name, got, first)
				}
			}
			if got := errorText(t, r.callRaw(t, "sum", `{"b": 2, "a": 3, "key": "k1"}`).Result); got != conflict {
				t.Errorf("other values: text = %q, want %q", got, conflict)
			}

			echo := taskOf(t, r.callRaw(t, "echo", `{"n":1,"key":"k2"}`))
			if got := taskOf(t, r.callRaw(t, "echo", `{ "key" : "k2" , "n" : 1 }`)); got != echo {
				t.Errorf("echo retried: task %s, want %s", got, echo)
			}
			if got := errorText(t, r.callRaw(t, "echo", `{"n":1.0,"key":"k2"}`).Result); got != conflict {
				t.Errorf("1.0 for 1: text = %q, want %q", got, conflict)
			}
			end := r.awaitEnd(t, echo)
			if res := decodeResult(t, end.Result); end.Status != mcp.TaskCompleted || len(res.Content) != 1 || res.Content[0].Text != `{"n":1,"key":"k2"}` {
				t.Errorf("echo: status %s, result %s", end.Status, end.Result)
			}
			if logs := r.logs.String(); strings.Contains(logs, "level=ERROR") {
				t.Errorf("errors logged:\n%s", logs)
			}
		})
	}
}

// taskOf returns the ID of the task a tools/call created or returned.
func taskOf(t *testing.T, resp *mcptest.Response) string {
	t.Helper()
	h, err := resp.TaskHandle()
	if err != nil {
		t.Fatalf("tools/call: %v (body %s)", err, resp.Body)
	}
	return h.TaskID
}
