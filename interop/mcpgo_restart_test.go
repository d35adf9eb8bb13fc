package interop

import (
	"context"
	"net/http"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoSessionSurvivesRestart restarts `taskwire serve` (SIGTERM, then
// serve again on the same SQLite file and address) under a 2025-11-25
// client with tasks, as a user's editor stays open across a server
// upgrade: the client keeps its session, and tasks/get in that session
// reads the task it created before the restart.
func TestMCPGoSessionSurvivesRestart(t *testing.T) {
	const version = "2025-11-25"
	p := startServe(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	trans, err := transport.NewStreamableHTTP(p.URL, transport.WithHTTPBasicClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpgo.NewClient(trans,
		mcpgo.WithProtocolVersion(version),
		mcpgo.WithClientCapabilities(mcp.ClientCapabilities{Tasks: &mcp.TasksCapability{
			Requests: &mcp.TaskRequestsCapability{Tools: &struct {
				Call *struct{} `json:"call,omitempty"`
			}{Call: &struct{}{}}},
		}}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "interop-mcpgo-restart", Version: "1.0.0"},
	}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	sessionID := c.GetSessionId()
	id := mcpGoCreateTask(t, ctx, trans, "create-before-restart", toolReports, reportArgs("mcpgo-restart"))
	if _, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}}); err != nil {
		t.Fatalf("tasks/result before the restart: %v", err)
	}

	q := p.restart(t)
	tr.CloseIdleConnections() // connections to the old process are dead

	got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	if err != nil {
		t.Fatalf("tasks/get in the same session after the restart: %v", err)
	}
	if got.TaskId != id || got.Status != mcp.TaskStatusCompleted {
		t.Errorf("tasks/get after the restart: task %s, want the completed task", marshal(t, got.Task))
	}
	if c.GetSessionId() != sessionID {
		t.Error("the client changed sessions")
	}
	checkNoLeaks(t, q, sessionID, id)
	checkNoLeaks(t, p, sessionID, id)
}
