package durable_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

type otherIn struct {
	A int `json:"a"`
}

type chanOut struct {
	C chan int `json:"c"`
}

type embedded struct {
	Key string `json:"key"`
}

type withEmbedded struct {
	embedded
	N int `json:"n"`
}

func lines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func decl(name string) durable.ToolDecl[sumIn, sumOut] {
	return durable.ToolDecl[sumIn, sumOut]{Tool: &mcp.Tool{Name: name}}
}

var rawSchema = json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"},"n":{"type":"integer"}}}`)

func rawRun(context.Context, *worker.Job) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// TestCheck lists the problems Check reports, each on its own line, sorted
// by tool name.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(s *durable.Set)
		want  []string
	}{{
		name:  "sound",
		build: func(s *durable.Set) { durable.Add(s, sumTool()) },
	}, {
		name: "name typo",
		build: func(s *durable.Set) {
			durable.Declare(s, decl("reports.generate"))
			durable.Implement(s, "reports.generat", add)
		},
		want: []string{
			`durable: tool "reports.generat": has a handler but no declaration`,
			`durable: tool "reports.generate": declared but has no handler`,
		},
	}, {
		name: "Out mismatch",
		build: func(s *durable.Set) {
			durable.Declare(s, decl("sum"))
			durable.Implement(s, "sum", func(context.Context, *worker.Job, sumIn) (otherOut, error) { return otherOut{}, nil })
		},
		want: []string{`durable: tool "sum": Out types differ: declared durable_test.sumOut, handler returns durable_test.otherOut`},
	}, {
		name: "In mismatch",
		build: func(s *durable.Set) {
			durable.Declare(s, decl("sum"))
			durable.Implement(s, "sum", func(context.Context, *worker.Job, otherIn) (sumOut, error) { return sumOut{}, nil })
		},
		want: []string{`durable: tool "sum": In types differ: declared durable_test.sumIn, handler takes durable_test.otherIn`},
	}, {
		name: "raw tool implemented again",
		build: func(s *durable.Set) {
			durable.AddRaw(s, durable.RawTool{Tool: &mcp.Tool{Name: "raw", InputSchema: rawSchema}, Run: rawRun})
			durable.Implement(s, "raw", add)
		},
		want: []string{`durable: tool "raw": implemented twice`},
	}, {
		name: "key names no field",
		build: func(s *durable.Set) {
			tool := sumTool()
			tool.IdempotencyKey = "Key" // the Go name, not the JSON one
			durable.Add(s, tool)
		},
		want: []string{`durable: tool "sum": IdempotencyKey "Key" names no JSON field of durable_test.sumIn`},
	}, {
		name: "key names a number",
		build: func(s *durable.Set) {
			tool := sumTool()
			tool.IdempotencyKey = "a"
			durable.Add(s, tool)
		},
		want: []string{`durable: tool "sum": IdempotencyKey "a" names a field of type int; it must be a string`},
	}, {
		name: "key in an embedded struct",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[withEmbedded, sumOut]{
				Tool:        &mcp.Tool{Name: "e"},
				Run:         func(context.Context, *worker.Job, withEmbedded) (sumOut, error) { return sumOut{}, nil },
				TaskOptions: durable.TaskOptions{IdempotencyKey: "key"},
			})
		},
	}, {
		name: "raw key not a string",
		build: func(s *durable.Set) {
			durable.AddRaw(s, durable.RawTool{Tool: &mcp.Tool{Name: "raw", InputSchema: rawSchema}, Run: rawRun, TaskOptions: durable.TaskOptions{IdempotencyKey: "n"}})
		},
		want: []string{`durable: tool "raw": IdempotencyKey "n" names a property without "type": "string"`},
	}, {
		name: "duplicates",
		build: func(s *durable.Set) {
			durable.Add(s, sumTool())
			durable.Add(s, sumTool())
		},
		want: []string{`durable: tool "sum": declared twice`, `durable: tool "sum": implemented twice`},
	}, {
		name: "invalid name",
		build: func(s *durable.Set) {
			tool := sumTool()
			tool.Tool = &mcp.Tool{Name: "sum two"}
			durable.Add(s, tool)
		},
		want: []string{`durable: tool name "sum two" may only use letters, digits, '_', '-' and '.'`},
	}, {
		name: "input schema not an object",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[int, sumOut]{
				Tool: &mcp.Tool{Name: "n"},
				Run:  func(context.Context, *worker.Job, int) (sumOut, error) { return sumOut{}, nil },
			})
		},
		want: []string{`durable: tool "n": input schema must have "type": "object"`},
	}, {
		name: "output schema cannot be inferred",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[sumIn, chanOut]{
				Tool: &mcp.Tool{Name: "c"},
				Run:  func(context.Context, *worker.Job, sumIn) (chanOut, error) { return chanOut{}, nil },
			})
		},
		want: []string{`durable: tool "c": output schema: For[durable_test.chanOut](): type chan int is unsupported by jsonschema`},
	}, {
		name: "raw without input schema",
		build: func(s *durable.Set) {
			durable.AddRaw(s, durable.RawTool{Tool: &mcp.Tool{Name: "raw"}, Run: rawRun})
		},
		want: []string{`durable: tool "raw": no input schema`},
	}, {
		name: "nil parts and negative options",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[sumIn, sumOut]{Run: add})
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "b"}, TaskOptions: durable.TaskOptions{MaxAttempts: -1, Delay: -1}})
		},
		want: []string{
			`durable: a declaration of In durable_test.sumIn and Out durable_test.sumOut has no Tool`,
			`durable: tool "b": MaxAttempts must not be negative`,
			`durable: tool "b": TTL, PollInterval and Delay must not be negative`,
			`durable: tool "b": the handler is nil`,
		},
	}, {
		name: "more attempts than a store keeps",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "b"},
				Run:         add,
				TaskOptions: durable.TaskOptions{MaxAttempts: backend.MaxMaxAttempts + 1},
			})
		},
		want: []string{`durable: tool "b": MaxAttempts must be at most 2147483647`},
	}, {
		name: "run timeouts out of range",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "neg"}, Run: add,
				TaskOptions: durable.TaskOptions{RunTimeout: -time.Second}})
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "long"}, Run: add,
				TaskOptions: durable.TaskOptions{RunTimeout: worker.MaxRunTimeout + time.Nanosecond}})
		},
		want: []string{
			`durable: tool "long": RunTimeout must be at most 168h0m0s (worker.MaxRunTimeout), got 168h0m0.000000001s`,
			`durable: tool "neg": RunTimeout must not be negative`,
		},
	}, {
		name: "queues and priorities out of range",
		build: func(s *durable.Set) {
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "ok"}, Run: add,
				TaskOptions: durable.TaskOptions{Queue: "mail.out-2_x", Priority: backend.LowestPriority}})
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "space"}, Run: add,
				TaskOptions: durable.TaskOptions{Queue: "my queue"}})
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "long"}, Run: add,
				TaskOptions: durable.TaskOptions{Queue: strings.Repeat("q", backend.MaxQueueNameBytes+1)}})
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "prio"}, Run: add,
				TaskOptions: durable.TaskOptions{Priority: 5}})
			durable.Add(s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: "both"}, Run: add,
				TaskOptions: durable.TaskOptions{Queue: "_q", Priority: -1}})
		},
		want: []string{
			`durable: tool "both": Queue "_q": a queue name must hold only ASCII letters, digits, '_', '-' and '.', starting with a letter or a digit`,
			`durable: tool "both": Priority: a priority must be between 1 (highest) and 4 (lowest), got -1`,
			`durable: tool "long": Queue "` + strings.Repeat("q", backend.MaxQueueNameBytes+1) + `": a queue name must be at most 64 bytes, got 65`,
			`durable: tool "prio": Priority: a priority must be between 1 (highest) and 4 (lowest), got 5`,
			`durable: tool "space": Queue "my queue": a queue name must hold only ASCII letters, digits, '_', '-' and '.', starting with a letter or a digit`,
		},
	}, {
		name: "every problem at once",
		build: func(s *durable.Set) {
			tool := sumTool()
			tool.IdempotencyKey = "nope"
			durable.Add(s, tool)
			durable.Declare(s, decl("a.tool"))
			durable.Implement(s, "z.tool", add)
		},
		want: []string{
			`durable: tool "a.tool": declared but has no handler`,
			`durable: tool "sum": IdempotencyKey "nope" names no JSON field of durable_test.sumIn`,
			`durable: tool "z.tool": has a handler but no declaration`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var s durable.Set
			tc.build(&s)
			if diff := cmp.Diff(tc.want, lines(s.Check())); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServeAndWorkCheck: Serve and Work run Check; Serve alone accepts a
// declaration without a handler (an API-only node), Work does not.
func TestServeAndWorkCheck(t *testing.T) {
	newEndpoint := func() *server.Endpoint {
		return server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "main",
			TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	}
	rt, err := worker.New(worker.Options{Store: openSQLite(t).Jobs()})
	if err != nil {
		t.Fatal(err)
	}
	st := openSQLite(t)

	var api durable.Set
	durable.Declare(&api, decl("sum"))
	if err := api.Serve(newEndpoint(), st); err != nil {
		t.Errorf("Serve of declarations only: %v", err)
	}
	want := []string{`durable: tool "sum": declared but has no handler`}
	if diff := cmp.Diff(want, lines(api.Work(rt))); diff != "" {
		t.Errorf("Work of declarations only (-want +got):\n%s", diff)
	}

	var bad durable.Set
	durable.Declare(&bad, decl("sum"))
	durable.Implement(&bad, "sum.typo", add)
	want = []string{`durable: tool "sum.typo": has a handler but no declaration`}
	if diff := cmp.Diff(want, lines(bad.Serve(newEndpoint(), st))); diff != "" {
		t.Errorf("Serve (-want +got):\n%s", diff)
	}

	// Work registers through worker.AddHandler: a kind the runtime already
	// handles is reported, naming the tool.
	var s durable.Set
	durable.Add(&s, sumTool())
	if err := s.Work(rt); err != nil {
		t.Fatalf("Work: %v", err)
	}
	want = []string{`durable: tool "sum": worker: kind "sum" already has a handler`}
	if diff := cmp.Diff(want, lines(s.Work(rt))); diff != "" {
		t.Errorf("second Work (-want +got):\n%s", diff)
	}
}
