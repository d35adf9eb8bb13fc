package server_test

import (
	"context"
	"fmt"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/task/memory"
)

// ReportInput and Report are the input and result of the example's tool.
type ReportInput struct {
	AccountID string `json:"accountId"`
}

type Report struct {
	Rows int `json:"rows"`
}

// A task-required tool that 2025-era clients without tasks can call too:
// their tools/call waits for the task on the POST (docs/tasks.md, "Waiting
// inline").
func ExampleWithWaitInline() {
	tasks, _ := memory.New(memory.Options{}) // development only
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "reports", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	server.AddTaskTool[ReportInput, Report](ep, &mcp.Tool{
		Name:        "reports.generate",
		Description: "Generates a report as a durable task.",
	}, func(ctx context.Context, req *server.Request, in ReportInput, cc *task.CreationContext) (task.Handle, error) {
		t, err := tasks.Create(cc)
		if err != nil {
			return task.Handle{}, err
		}
		return task.Handle{ID: t.ID()}, nil
	}, server.WithWaitInline())
	_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: tasks})
	fmt.Println(err)
	// Output: <nil>
}
