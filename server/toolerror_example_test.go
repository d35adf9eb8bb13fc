package server_test

import (
	"context"
	"errors"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// ExampleNewToolError shows the error rule of a creation handler: what the
// model should read is a ToolError; anything else, such as a store
// failure, reaches the client only as -32603 "Internal error" and is
// logged by the server.
func ExampleNewToolError() {
	var st backend.Enqueuer // a durable store, from store.Open
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "app", Version: "1.0.0"})
	type In struct {
		Rows int `json:"rows"`
	}
	type Out struct {
		Checksum string `json:"checksum"`
	}
	server.AddTaskTool[In, Out](ep, &mcp.Tool{Name: "reports.generate"},
		func(ctx context.Context, _ *server.Request, in In, cc *task.CreationContext) (task.Handle, error) {
			if in.Rows < 1 {
				return task.Handle{}, server.NewToolError(errors.New("rows must be at least 1"))
			}
			t, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{})
			if errors.Is(err, backend.ErrIdempotencyConflict) {
				return task.Handle{}, server.NewToolError(err)
			}
			if err != nil {
				return task.Handle{}, err // -32603 to the client, the cause to the log
			}
			return task.Handle{ID: t.ID()}, nil
		})
}
