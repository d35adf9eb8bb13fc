package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// waitSaved is the snippet of docs/client.md ("Tasks"): a handle rebuilt
// from a saved ID, waited on, and its errors told apart.
func waitSaved(ctx context.Context, c *client.Client, savedID string) (string, error) {
	out, err := c.Task(savedID).Wait(ctx)
	var failed *client.TaskFailedError
	var input *client.InputRequiredError
	switch {
	case err == nil && out.IsError:
		return "the tool reported an error: " + string(out.StructuredContent), nil
	case err == nil:
		return string(out.StructuredContent), nil
	case errors.As(err, &failed):
		return "", fmt.Errorf("task failed with %d: %s", failed.Err.Code, failed.Err.Message)
	case errors.Is(err, client.ErrTaskCancelled):
		return "cancelled", nil
	case errors.Is(err, client.ErrTaskNotFound):
		return "", errors.New("the task is gone (unknown or past its TTL)")
	case errors.As(err, &input):
		return "", fmt.Errorf("the task waits for input %v; answer with Task.Answer", input.Keys)
	}
	return "", err
}

// ExampleClient_Task starts a task, keeps its ID, and waits for it from a
// second client, as another process would later.
func ExampleClient_Task() {
	mem, err := memory.New(memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "reports", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	server.AddTaskTool[reportIn, reportOut](ep, &mcp.Tool{Name: "report", Description: "Builds a report."},
		func(_ context.Context, _ *server.Request, _ reportIn, cc *task.CreationContext) (task.Handle, error) {
			t, err := mem.Create(cc)
			return task.Handle{ID: t.ID()}, err
		})
	h, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()

	first, err := client.New(srv.URL+"/mcp", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := first.Call(ctx, "report", map[string]string{"region": "eu"})
	if err != nil {
		log.Fatal(err)
	}
	savedID := res.Task.ID()
	first.Close()

	// The worker finishes the task.
	mem.Complete(savedID, &mcp.CallToolResult{StructuredContent: []byte(`{"rows":3}`)}, "done")

	later, err := client.New(srv.URL+"/mcp", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer later.Close()
	out, err := waitSaved(ctx, later, savedID)
	fmt.Println(out, err)
	// Output: {"rows":3} <nil>
}
