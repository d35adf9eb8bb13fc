package interop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

type buildArgs struct {
	Steps  int `json:"steps" jsonschema:"how many steps"`
	HoldAt int `json:"holdAt,omitempty" jsonschema:"the step after which to wait for the test"`
}

type built struct {
	Steps int `json:"steps"`
}

// goSDKSlowServer is a go-sdk server whose slow.build reports "step i of
// n" progress, waiting after step HoldAt until release is closed, and
// whose add answers inline.
func goSDKSlowServer(t *testing.T, held chan<- struct{}, release <-chan struct{}) string {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "peer-gosdk-slow", Version: "1.0.0"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "slow.build", Description: "Build in steps."},
		func(ctx context.Context, req *gosdk.CallToolRequest, in buildArgs) (*gosdk.CallToolResult, built, error) {
			for i := 1; i <= in.Steps; i++ {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &gosdk.ProgressNotificationParams{
						ProgressToken: tok, Message: fmt.Sprintf("step %d of %d", i, in.Steps),
						Progress: float64(i), Total: float64(in.Steps),
					})
				}
				if i == in.HoldAt {
					held <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return nil, built{}, ctx.Err()
					}
				}
			}
			return nil, built{Steps: in.Steps}, nil
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *gosdk.CallToolRequest, in addArgs) (*gosdk.CallToolResult, sum, error) {
			return nil, sum{Sum: in.A + in.B}, nil
		})
	srv := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGatewayInFrontOfGoSDK puts package gateway, on SQLite, in front of a
// go-sdk server (which has no tasks): a 2026-07-28 client gets a task for
// slow.build whose statusMessage follows the upstream's progress and whose
// result is the upstream's; a 2025-06-18 client without tasks waits
// inline for the same tool; add passes through inline.
func TestGatewayInFrontOfGoSDK(t *testing.T) {
	held := make(chan struct{}, 4)
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseAll)
	upstream := goSDKSlowServer(t, held, release)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Options{Upstream: upstream + "/", TaskTools: []string{"slow.*"}})
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
	var tools durable.Set
	if err := g.Register(ep, &tools); err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: filepath.Join(t.TempDir(), "gateway.db")}},
		Endpoint:      ep,
		Tools:         &tools,
		Workers:       2,
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		releaseAll()
		if err := n.Shutdown(); err != nil {
			t.Errorf("node Shutdown: %v", err)
		}
		if err := g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	t.Logf("gateway negotiated %s with the go-sdk upstream", g.ProtocolVersion())

	t.Run("2026-07-28 task", func(t *testing.T) {
		c := gatewayClient(t, n.URL(), nil)
		res, err := c.Call(ctx, "slow.build", buildArgs{Steps: 2, HoldAt: 1})
		if err != nil || res.Task == nil {
			t.Fatalf("slow.build: %+v %v, want a task", res, err)
		}
		<-held
		var seen string
		for u, err := range res.Task.Updates(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if seen = u.StatusMessage; seen == "step 1 of 2" {
				break
			}
		}
		releaseAll()
		out, err := res.Task.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(`{"steps":2}`, string(out.StructuredContent)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("2025-06-18 waits inline", func(t *testing.T) {
		c := gatewayClient(t, n.URL(), []string{mcp.ProtocolVersion20250618})
		var messages []string
		res, err := c.Call(ctx, "slow.build", buildArgs{Steps: 3}, client.WithProgress(func(p client.Progress) {
			messages = append(messages, p.Message)
		}))
		if err != nil || res.Task != nil {
			t.Fatalf("slow.build: %+v %v, want an inline result", res, err)
		}
		if diff := cmp.Diff(`{"steps":3}`, string(res.Result.StructuredContent)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if len(messages) == 0 {
			t.Error("no progress notification while waiting inline")
		}
	})

	t.Run("pass-through", func(t *testing.T) {
		c := gatewayClient(t, n.URL(), nil)
		res, err := c.Call(ctx, "add", addArgs{A: 2, B: 3})
		if err != nil || res.Task != nil {
			t.Fatalf("add: %+v %v, want an inline result", res, err)
		}
		if diff := cmp.Diff(`{"sum":5}`, string(res.Result.StructuredContent)); diff != "" {
			t.Errorf("add (-want +got):\n%s", diff)
		}
	})
}

func gatewayClient(t *testing.T, url string, versions []string) *client.Client {
	c, err := client.New(url, client.Options{ProtocolVersions: versions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
