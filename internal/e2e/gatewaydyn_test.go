package e2e

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestGatewayFleetLateTaskTool runs a gateway fleet on PostgreSQL, an API
// node (`taskwire gateway --workers 0`) and a separate `taskwire gateway
// worker`, in front of an upstream that adds a task tool after both
// started and announces it (tools/list_changed on the listen each process
// keeps open). Neither restarts: the API node serves the new tool as a
// task tool, and the worker runs its task, calling the upstream once.
func TestGatewayFleetLateTaskTool(t *testing.T) {
	pgURL := sharedPostgres(t)
	schema := newSchema(t, pgURL)

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	var lateCalls atomic.Int64
	server.AddTool(ep, &mcp.Tool{Name: "first.build"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, buildCall, error) {
		return nil, buildCall{Call: 1}, nil
	})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep},
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})

	upstreamFlags := []string{"--upstream", hs.URL + "/mcp", "--task-tools", "*.build"}
	common := []string{"--store", pgURL, "--schema", schema, "--log-level", "warn", "--shutdown-grace", "1s"}
	api := launchProc(t, "gateway-api", append(append([]string{"gateway", "--addr", "127.0.0.1:0", "--workers", "0"}, upstreamFlags...), common...)...)
	api.awaitServing()
	w := launchProc(t, "gateway-worker", append(append([]string{"gateway", "worker", "--workers", "2"}, upstreamFlags...), common...)...)

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := mcpclient.New(api.url, mcpclient.Options{Token: func(context.Context) (string, error) { return "alice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The worker runs: a task of the tool it started with completes.
	res, err := c.Call(ctx, "first.build", nil)
	if err != nil || res.Task == nil {
		t.Fatalf("first.build: %+v %v, want a task", res, err)
	}
	if _, err := res.Task.Wait(ctx); err != nil {
		t.Fatalf("first.build: %v\n%s", err, w.output())
	}

	late := mcp.Tool{Name: "late.build", InputSchema: []byte(`{"type":"object"}`), OutputSchema: []byte(
		`{"type":"object","properties":{"call":{"type":"integer"}},"required":["call"]}`)}
	if err := ep.UpdateTools(server.PutRawTool(&late, func(context.Context, *server.Request) (*mcp.CallToolResult, error) {
		lateCalls.Add(1)
		return mcp.StructuredResult([]byte(`{"call":7}`)), nil
	})); err != nil {
		t.Fatal(err)
	}
	for {
		res, err = c.Call(ctx, "late.build", nil)
		if err == nil && res.Task != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("late.build never became a task tool: %+v %v\n%s", res, err, api.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatalf("late.build: %v\n%s", err, w.output())
	}
	if diff := cmp.Diff(`{"call":7}`, string(out.StructuredContent)); diff != "" {
		t.Errorf("late.build result (-want +got):\n%s", diff)
	}
	if n := lateCalls.Load(); n != 1 {
		t.Errorf("the upstream's late.build was called %d times, want once", n)
	}
}
