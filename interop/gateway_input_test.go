package interop

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

type deployed struct {
	Approved bool `json:"approved"`
}

// goSDKAskingServer is a go-sdk server (2025-era sessions) whose deploy
// asks its caller to approve with elicitation/create on the call's
// stream, counting its calls.
func goSDKAskingServer(t *testing.T, calls *atomic.Int64) string {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "peer-gosdk-asking", Version: "1.0.0"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "deploy", Description: "Asks, then deploys."},
		func(ctx context.Context, req *gosdk.CallToolRequest, _ struct{}) (*gosdk.CallToolResult, deployed, error) {
			calls.Add(1)
			res, err := req.Session.Elicit(ctx, &gosdk.ElicitParams{
				Message: "Deploy to production?",
				RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"}},
			})
			if err != nil {
				return nil, deployed{}, err
			}
			return nil, deployed{Approved: res.Action == "accept" && res.Content["ok"] == true}, nil
		})
	srv := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGatewayInlineInputGoSDK: a go-sdk upstream's elicitation/create
// during a call the gateway passes through inline reaches the downstream
// client live, on the one upstream call: a go-sdk client in a 2025-11-25
// session gets it as a request on its stream, the project's 2026-07-28
// client as the call's input round; each answer goes back on the open
// upstream request, which is made once per downstream call.
func TestGatewayInlineInputGoSDK(t *testing.T) {
	var calls atomic.Int64
	upstream := goSDKAskingServer(t, &calls)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Options{Upstream: upstream + "/"})
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
	if err := g.Register(ep, new(durable.Set)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		if err := g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	t.Logf("gateway negotiated %s with the go-sdk upstream", g.ProtocolVersion())

	t.Run("go-sdk client 2025-11-25", func(t *testing.T) {
		before := calls.Load()
		var asked atomic.Int64
		c := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk", Version: "1.0.0"}, &gosdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
				asked.Add(1)
				if req.Params.Message != "Deploy to production?" {
					t.Errorf("asked %q", req.Params.Message)
				}
				return &gosdk.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
			},
		})
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		cs, err := c.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: tr}},
			&gosdk.ClientSessionOptions{ProtocolVersion: mcp.ProtocolVersion20251125})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		got := goSDKCall(t, ctx, cs, "deploy", map[string]any{})
		if diff := cmp.Diff(`{"approved":true}`, string(got)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if n := asked.Load(); n != 1 {
			t.Errorf("the client was asked %d times, want 1", n)
		}
		if n := calls.Load() - before; n != 1 {
			t.Errorf("the upstream was called %d times, want 1", n)
		}
	})

	t.Run("taskwire client 2026-07-28", func(t *testing.T) {
		before := calls.Load()
		var asked atomic.Int64
		c, err := client.New(hs.URL+"/mcp", client.Options{Handlers: client.Handlers{
			Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"ok": true}}, nil
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res, err := c.Call(ctx, "deploy", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(`{"approved":true}`, string(res.Result.StructuredContent)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if n := asked.Load(); n != 1 {
			t.Errorf("the client was asked %d times, want 1", n)
		}
		if n := calls.Load() - before; n != 1 {
			t.Errorf("the upstream was called %d times, want 1", n)
		}
	})
}
