package durable_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The texts of a retry whose key holds the task of another kind of call.
const (
	otherRevision = "key was already used by a call of another MCP protocol revision, whose task this call " +
		"cannot be given: repeat the call from a client of that revision to reach it, or use a new key"
	otherVersion = "key was already used by a call of another version of this tool (its output schema or " +
		"task input changed since), whose task this call cannot be given: use a new key"
)

// caller makes one tools/call of sum with the given key and returns the
// result, or the JSON-RPC error as text.
type caller struct {
	name string
	call func(t *testing.T, r *rig, key string) (res json.RawMessage, rpcErr string)
}

var (
	modernTask = caller{"2026-07-28 task", func(t *testing.T, r *rig, key string) (json.RawMessage, string) {
		resp := r.call(t, "sum", map[string]any{"a": 2, "b": 3, "key": key})
		if resp.Error != nil {
			return nil, string(resp.Body)
		}
		return resp.Result, ""
	}}
	inline0618 = legacyCaller("2025-06-18 inline", mcp.ProtocolVersion20250618, nil, false)
	inline1125 = legacyCaller("2025-11-25 inline", mcp.ProtocolVersion20251125, nil, false)
	task1125   = legacyCaller("2025-11-25 task", mcp.ProtocolVersion20251125,
		map[string]any{"tasks": map[string]any{"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}, true)
)

// legacyCaller calls from a new session of a 2025-era client declaring
// caps; with task, the call carries params.task.
func legacyCaller(name, version string, caps map[string]any, withTask bool) caller {
	return caller{name, func(t *testing.T, r *rig, key string) (json.RawMessage, string) {
		c := newLegacyClient(t, r.url+"/mcp", version, caps)
		params := map[string]any{"name": "sum", "arguments": map[string]any{"a": 2, "b": 3, "key": key}}
		if withTask {
			params["task"] = map[string]any{"ttl": 60000}
		}
		m := c.request("tools/call", params)
		if m.Error != nil {
			return nil, fmt.Sprintf("%+v", *m.Error)
		}
		return m.Result, ""
	}}
}

// TestRetryFromAnotherRevision: a key first used by a call of one protocol
// revision, then retried with the same arguments by a client of another
// (a 2025 client waiting inline or using 2025-11-25 tasks, a 2026-07-28
// client with the Tasks extension, in both directions), gets a tool error
// saying so, on SQLite and PostgreSQL, and nothing is logged as an error:
// the task belongs to the revision that created it. A retry from the same
// revision still gets its task.
func TestRetryFromAnotherRevision(t *testing.T) {
	for _, bc := range stores {
		t.Run(bc.name, func(t *testing.T) {
			var s durable.Set
			durable.Add(&s, sumTool())
			r := newRig(t, bc.open(t), &s, &s)
			for i, tc := range []struct{ first, retry caller }{
				{inline0618, modernTask},
				{modernTask, inline1125},
				{task1125, modernTask},
				{modernTask, task1125},
				{inline0618, inline1125},
				{task1125, inline0618},
			} {
				key := "k" + string(rune('a'+i))
				if res, rpcErr := tc.first.call(t, r, key); rpcErr != "" || strings.Contains(string(res), `"isError":true`) {
					t.Fatalf("%s: %s%s", tc.first.name, res, rpcErr)
				}
				res, rpcErr := tc.retry.call(t, r, key)
				if rpcErr != "" {
					t.Errorf("%s, then %s: %s, want a tool error", tc.first.name, tc.retry.name, rpcErr)
					continue
				}
				if got := errorText(t, res); got != otherRevision {
					t.Errorf("%s, then %s: text = %q, want %q", tc.first.name, tc.retry.name, got, otherRevision)
				}
			}
			first := taskOf(t, r.call(t, "sum", map[string]any{"a": 2, "b": 3, "key": "same"}))
			if got := taskOf(t, r.call(t, "sum", map[string]any{"a": 2, "b": 3, "key": "same"})); got != first {
				t.Errorf("same revision: task %s, want %s", got, first)
			}
			if logs := r.logs.String(); strings.Contains(logs, "level=ERROR") {
				t.Errorf("errors logged:\n%s", logs)
			}
		})
	}
}

// TestRetryOfAnotherToolVersion: after a deployment changed a tool's
// output schema or its task input, a retry that the new server receives
// with the key and arguments of a call the old one served gets a tool
// error saying so, on SQLite and PostgreSQL, with nothing logged as an
// error: the task's result is bound to the declaration it was created
// under.
func TestRetryOfAnotherToolVersion(t *testing.T) {
	for _, bc := range stores {
		t.Run(bc.name, func(t *testing.T) {
			st := bc.open(t)
			var old durable.Set
			durable.Add(&old, sumTool())
			before := newRig(t, st, &old, &old)

			var schema durable.Set
			durable.Declare(&schema, durable.ToolDecl[sumIn, otherOut]{Tool: sumTool().Tool, TaskOptions: durable.TaskOptions{IdempotencyKey: "key"}})
			var input durable.Set
			durable.Declare(&input, durable.ToolDecl[sumIn, sumOut]{
				Tool:        sumTool().Tool,
				TaskOptions: durable.TaskOptions{IdempotencyKey: "key", TaskInput: []string{task.InputElicitationForm}},
			})
			for _, tc := range []struct {
				name string
				set  *durable.Set
			}{{"output schema", &schema}, {"task input", &input}} {
				after := newRig(t, st, tc.set, nil)
				key := "key-" + tc.name
				created := taskOf(t, before.call(t, "sum", map[string]any{"a": 2, "b": 3, "key": key}))
				if resp := after.call(t, "sum", map[string]any{"a": 2, "b": 3, "key": key}); resp.Error != nil {
					t.Errorf("%s: %s, want a tool error", tc.name, resp.Body)
				} else if got := errorText(t, resp.Result); got != otherVersion {
					t.Errorf("%s: text = %q, want %q", tc.name, got, otherVersion)
				}
				if got := taskOf(t, before.call(t, "sum", map[string]any{"a": 2, "b": 3, "key": key})); got != created {
					t.Errorf("%s: the old version's retry got task %s, want %s", tc.name, got, created)
				}
				if logs := after.logs.String(); strings.Contains(logs, "level=ERROR") {
					t.Errorf("%s: errors logged:\n%s", tc.name, logs)
				}
			}
		})
	}
}
