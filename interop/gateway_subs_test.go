package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

// subsEnv makes the test binary serve goSDKSubsServer over stdio.
const subsEnv = "INTEROP_GOSDK_SUBS_STDIO"

type uriArgs struct {
	URI string `json:"uri" jsonschema:"a resource URI"`
}

type subsCount struct {
	Count int `json:"count"`
}

// goSDKSubsServer is a go-sdk server with one resource and subscribe
// handlers that count the subscriptions by URI; its tools are touch
// (ResourceUpdated of uri), subs (the count of uri) and, when dies, die
// (the process exits).
func goSDKSubsServer(dies bool) *gosdk.Server {
	var mu sync.Mutex
	counts := map[string]int{}
	add := func(uri string, d int) {
		mu.Lock()
		defer mu.Unlock()
		counts[uri] += d
	}
	s := gosdk.NewServer(&gosdk.Implementation{Name: "peer-gosdk-subs", Version: "1.0.0"}, &gosdk.ServerOptions{
		SubscribeHandler:   func(_ context.Context, r *gosdk.SubscribeRequest) error { add(r.Params.URI, 1); return nil },
		UnsubscribeHandler: func(_ context.Context, r *gosdk.UnsubscribeRequest) error { add(r.Params.URI, -1); return nil },
	})
	s.AddResource(&gosdk.Resource{URI: "file:///config.json", Name: "config", MIMEType: "application/json"},
		func(_ context.Context, r *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: r.Params.URI, Text: "{}"}}}, nil
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "touch", Description: "Announce an update of a resource."},
		func(ctx context.Context, _ *gosdk.CallToolRequest, in uriArgs) (*gosdk.CallToolResult, subsCount, error) {
			return nil, subsCount{}, s.ResourceUpdated(ctx, &gosdk.ResourceUpdatedNotificationParams{URI: in.URI})
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "subs", Description: "Count the subscriptions of a resource."},
		func(_ context.Context, _ *gosdk.CallToolRequest, in uriArgs) (*gosdk.CallToolResult, subsCount, error) {
			mu.Lock()
			defer mu.Unlock()
			return nil, subsCount{Count: counts[in.URI]}, nil
		})
	if dies {
		gosdk.AddTool(s, &gosdk.Tool{Name: "die", Description: "Exit the process."},
			func(context.Context, *gosdk.CallToolRequest, struct{}) (*gosdk.CallToolResult, subsCount, error) {
				os.Exit(3)
				return nil, subsCount{}, nil
			})
	}
	return s
}

// serveGoSDKSubsStdio serves goSDKSubsServer on this process's standard
// input and output, as a process the gateway starts.
func serveGoSDKSubsStdio() int {
	err := goSDKSubsServer(true).Run(context.Background(), &gosdk.StdioTransport{})
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// listeningGateway serves g from a node that serves listens, as taskwire
// gateway does, and returns its MCP URL and the revision the gateway
// negotiated with the upstream.
func listeningGateway(t *testing.T, ctx context.Context, opts gateway.Options) (string, string) {
	t.Helper()
	g, err := gateway.New(ctx, opts)
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
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Errorf("node Shutdown: %v", err)
		}
		if err := g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	return n.URL(), g.ProtocolVersion()
}

// updateCatcher is a downstream client whose resource updates arrive on
// got.
func updateCatcher(t *testing.T, url string, versions ...string) (*client.Client, chan string) {
	t.Helper()
	got := make(chan string, 64)
	c, err := client.New(url, client.Options{ProtocolVersions: versions, OnResourceUpdated: func(uri string) {
		select {
		case got <- uri:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, got
}

// TestGatewayGoSDKResourceSubscriptions puts the gateway in front of a
// go-sdk server with subscribe handlers, over HTTP in each revision it
// speaks and over stdio: a 2025-06-18 session's resources/subscribe and a
// 2026-07-28 listen for the same URI subscribe upstream once; the
// upstream's ResourceUpdated reaches both; unsubscribing both, or ending
// the last session, unsubscribes upstream; and a restarted stdio process
// is subscribed again.
func TestGatewayGoSDKResourceSubscriptions(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// go-sdk serves 2026-07-28 only from a stateless handler.
	httpUpstream := func(t *testing.T, stateless bool) string {
		s := goSDKSubsServer(false)
		srv := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
			&gosdk.StreamableHTTPOptions{Stateless: stateless}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cases := []struct {
		name string
		opts func(t *testing.T) gateway.Options
	}{
		{"http 2026-07-28", func(t *testing.T) gateway.Options { return gateway.Options{Upstream: httpUpstream(t, true)} }},
		{"http 2025-11-25", func(t *testing.T) gateway.Options { return gateway.Options{Upstream: httpUpstream(t, false)} }},
		{"stdio", func(*testing.T) gateway.Options {
			return gateway.Options{UpstreamCommand: []string{exe}, UpstreamEnv: append(os.Environ(), subsEnv+"=1")}
		}},
	}
	const uri = "file:///config.json"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			url, version := listeningGateway(t, ctx, tc.opts(t))
			if want, ok := strings.CutPrefix(tc.name, "http "); ok && version != want {
				t.Fatalf("the gateway negotiated %s with the go-sdk upstream, want %s", version, want)
			}
			probe := gatewayClient(t, url, nil)
			count := func() int {
				res, err := probe.Call(ctx, "subs", uriArgs{URI: uri})
				if err != nil || res.Result == nil {
					return -1
				}
				var c subsCount
				if json.Unmarshal(res.Result.StructuredContent, &c) != nil {
					return -1
				}
				return c.Count
			}
			awaitCount := func(want int) {
				t.Helper()
				for n := count(); n != want; n = count() {
					if ctx.Err() != nil {
						t.Fatalf("upstream subscriptions of %s: %d, want %d", uri, n, want)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			awaitUpdate := func(got chan string) {
				t.Helper()
				for {
					if _, err := probe.Call(ctx, "touch", uriArgs{URI: uri}); err != nil {
						t.Fatal(err)
					}
					select {
					case u := <-got:
						if u == uri {
							return
						}
					case <-time.After(100 * time.Millisecond):
					case <-ctx.Done():
						t.Fatal("no update reached the subscriber")
					}
				}
			}

			old, oldGot := updateCatcher(t, url, mcp.ProtocolVersion20250618)
			modern, modernGot := updateCatcher(t, url)
			if err := old.SubscribeResource(ctx, uri); err != nil {
				t.Fatalf("2025 subscribe: %v", err)
			}
			if err := modern.SubscribeResource(ctx, uri); err != nil {
				t.Fatalf("2026 listen: %v", err)
			}
			awaitCount(1)
			awaitUpdate(oldGot)
			awaitUpdate(modernGot)

			if tc.name == "stdio" {
				_, _ = probe.Call(ctx, "die", struct{}{}) // the process exits mid-call
				awaitCount(1)                             // the new process is subscribed again
				awaitUpdate(oldGot)
				awaitUpdate(modernGot)
			}

			if err := old.UnsubscribeResource(ctx, uri); err != nil {
				t.Fatal(err)
			}
			if got := count(); got != 1 {
				t.Errorf("after one of two unsubscribed: %d upstream subscriptions, want 1", got)
			}
			if err := modern.UnsubscribeResource(ctx, uri); err != nil {
				t.Fatal(err)
			}
			awaitCount(0)

			ender, _ := updateCatcher(t, url, mcp.ProtocolVersion20250618)
			if err := ender.SubscribeResource(ctx, uri); err != nil {
				t.Fatal(err)
			}
			awaitCount(1)
			if err := ender.Close(); err != nil {
				t.Fatal(err)
			}
			awaitCount(0)
		})
	}
}
