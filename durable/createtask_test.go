package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestCreateTaskFromGo creates a durable tool's task from Go for a
// principal, with the tool's validation and idempotency, and checks that
// the principal, and only the principal, follows it to its result.
func TestCreateTaskFromGo(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			set := &durable.Set{}
			durable.Add(set, sumTool())
			r := newRig(t, s.open(t), set, set)
			ctx := context.Background()
			alice := server.Identity{Principal: "alice", Tenant: "alice"}
			create := func(args string) (mcp.TaskInfo, error) {
				return r.srv.CreateTask(ctx, server.CreateTaskParams{Tool: "sum", Arguments: json.RawMessage(args), Identity: alice})
			}

			info, err := create(`{"a": 2, "b": 3, "key": "export-1"}`)
			if err != nil {
				t.Fatalf("CreateTask: %v", err)
			}
			if info.TaskID == "" || info.Status != mcp.TaskWorking {
				t.Fatalf("CreateTask = %+v, want a working task", info)
			}
			again, err := create(`{"b": 3, "a": 2, "key": "export-1"}`)
			if err != nil || again.TaskID != info.TaskID {
				t.Fatalf("a repeat with the same key = %q, %v; want %q", again.TaskID, err, info.TaskID)
			}

			// A key given to CreateTask stands for the arguments' key: three
			// racing calls with it get one task.
			ids := make(chan string, 3)
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					info, err := r.srv.CreateTask(ctx, server.CreateTaskParams{Tool: "sum", Arguments: json.RawMessage(`{"a": 1, "b": 1}`),
						Identity: alice, IdempotencyKey: "schedule/daily/2026-12-03"})
					if err != nil {
						t.Errorf("CreateTask with a key: %v", err)
					}
					ids <- info.TaskID
				})
			}
			wg.Wait()
			close(ids)
			keyed := map[string]bool{}
			for id := range ids {
				keyed[id] = true
			}
			if len(keyed) != 1 || keyed[info.TaskID] {
				t.Errorf("three CreateTask calls with one key made tasks %v, want one new task", keyed)
			}

			r.client.Header = http.Header{"Authorization": {"Bearer alice"}}
			got := r.awaitEnd(t, info.TaskID)
			if got.Status != mcp.TaskCompleted || !strings.Contains(string(got.Result), `"sum":5`) {
				t.Fatalf("alice's tasks/get = %s %s, want completed with sum 5", got.Status, got.Result)
			}
			r.client.Header = http.Header{"Authorization": {"Bearer bob"}}
			resp, err := r.client.GetTask(ctx, info.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Error == nil {
				t.Fatalf("bob read alice's task: %s", resp.Body)
			}

			var tre *server.ToolResultError
			if _, err := create(`{"a": -1, "b": 3}`); !errors.As(err, &tre) || !strings.Contains(tre.Text, "must not be negative") {
				t.Errorf("Validate failing: err = %v, want a ToolResultError with Validate's text", err)
			}
			if _, err := create(`{"a": 1, "b": 1, "key": "export-1"}`); !errors.As(err, &tre) || !strings.Contains(tre.Text, "already used") {
				t.Errorf("a key reused with other arguments: err = %v, want a ToolResultError", err)
			}
			if _, err := create(`{"a": "two"}`); !errors.As(err, &tre) || !strings.Contains(tre.Text, "Invalid arguments") {
				t.Errorf("arguments that break the schema: err = %v, want a ToolResultError", err)
			}
			var me *mcp.Error
			if _, err := r.srv.CreateTask(ctx, server.CreateTaskParams{Tool: "nope", Identity: alice}); !errors.As(err, &me) {
				t.Errorf("an unknown tool: err = %v, want an *mcp.Error", err)
			}
			if _, err := r.srv.CreateTask(ctx, server.CreateTaskParams{Endpoint: "other", Tool: "sum"}); !errors.Is(err, server.ErrBadParams) {
				t.Errorf("an unknown endpoint: err = %v, want ErrBadParams", err)
			}
			if _, err := r.srv.CreateTask(ctx, server.CreateTaskParams{Tool: "sum", Arguments: json.RawMessage(`{"a":`)}); !errors.Is(err, server.ErrBadParams) {
				t.Errorf("arguments that are not JSON: err = %v, want ErrBadParams", err)
			}
		})
	}
}
