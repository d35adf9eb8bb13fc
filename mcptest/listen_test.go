package mcptest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func buildWithListen(m task.Manager) (http.Handler, error) {
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "reports", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	server.AddTaskTool[reportIn, reportOut](ep, &mcp.Tool{Name: "report", Description: "Builds a report."},
		func(_ context.Context, _ *server.Request, _ reportIn, cc *task.CreationContext) (task.Handle, error) {
			t, err := m.(*memory.Manager).Create(cc)
			return task.Handle{ID: t.ID()}, err
		})
	return server.New(server.Options{
		Endpoints:     []*server.Endpoint{ep},
		TaskManager:   m,
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
	})
}

func TestListenDeliversTaskNotifications(t *testing.T) {
	m, _ := memory.New(memory.Options{})
	sim, err := mcptest.NewSimulator(buildWithListen, m, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, _ := sim.CallTool(ctx, "report", map[string]any{"account": "a"})
	h, err := res.TaskHandle()
	if err != nil {
		t.Fatalf("%v %s", err, res.Body)
	}
	st, errRes, err := sim.Listen(ctx, &mcp.SubscriptionFilter{TaskIDs: []string{h.TaskID, "unknown-id"}})
	if err != nil || st == nil {
		t.Fatalf("listen: %v %+v", err, errRes)
	}
	defer st.Close()
	ack, err := st.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ackMsg struct {
		Method string                 `json:"method"`
		Params mcp.AcknowledgedParams `json:"params"`
	}
	json.Unmarshal(ack, &ackMsg)
	if ackMsg.Method != mcp.NotificationSubscriptionsAcknowledged || len(ackMsg.Params.Notifications.TaskIDs) != 1 {
		t.Fatalf("ack = %s", ack)
	}
	m.Complete(h.TaskID, &mcp.CallToolResult{StructuredContent: []byte(`{"rows":1}`)}, "done")
	msg, err := st.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		Method string                     `json:"method"`
		Params mcp.TaskNotificationParams `json:"params"`
	}
	if err := json.Unmarshal(msg, &n); err != nil || n.Method != mcp.NotificationTasks || n.Params.Status != task.Completed {
		t.Fatalf("notification = %s", msg)
	}
}
