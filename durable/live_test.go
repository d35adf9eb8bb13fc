package durable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// TestAddRawLive: a raw tool added to a set that a served endpoint and a
// running runtime use is served at once (a call creates a task) and
// worked at once (the task completes); a tool with problems, or a name
// the set holds, is refused with nothing added.
func TestAddRawLive(t *testing.T) {
	var s durable.Set
	echo := func(name string) durable.RawTool {
		return durable.RawTool{
			Tool: &mcp.Tool{Name: name, InputSchema: rawSchema},
			Run: func(_ context.Context, job *worker.Job) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " " + string(job.Arguments())}}}, nil
			},
		}
	}
	durable.AddRaw(&s, echo("first"))
	r := newRig(t, openSQLite(t), &s, &s)

	if err := s.AddRawLive(echo("late")); err != nil {
		t.Fatal(err)
	}
	got := r.awaitEnd(t, r.create(t, "late", map[string]any{"n": 1}))
	if res := decodeResult(t, got.Result); got.Status != mcp.TaskCompleted || len(res.Content) != 1 || res.Content[0].Text != `late {"n":1}` {
		t.Errorf("the late tool's task: status %s, result %s", got.Status, got.Result)
	}

	for _, tc := range []struct {
		name string
		tool durable.RawTool
		want string
	}{
		{"twice", echo("late"), `tool "late": declared twice`},
		{"no handler", durable.RawTool{Tool: &mcp.Tool{Name: "nohandler", InputSchema: rawSchema}}, "the handler is nil"},
		{"bad job options", func() durable.RawTool { t := echo("neg"); t.MaxAttempts = -1; return t }(), "MaxAttempts must not be negative"},
	} {
		if err := s.AddRawLive(tc.tool); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := s.Check(); err != nil {
		t.Errorf("the set after refusals: %v", err)
	}
	if err := s.AddRawLive(echo("neg")); err != nil {
		t.Errorf("a name refused before, now sound: %v", err)
	}
}
