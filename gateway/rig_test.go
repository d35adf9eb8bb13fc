package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// waitFor bounds every wait of these tests.
const waitFor = 30 * time.Second

// BuildIn is the input of the upstream's slow.build.
type BuildIn struct {
	Steps int `json:"steps"`
	// HoldAt, when positive, is the step after whose progress the call
	// waits for the release.
	HoldAt int `json:"holdAt,omitempty"`
}

// BuildOut is its output.
type BuildOut struct {
	Steps int `json:"steps"`
	Call  int `json:"call"`
}

// upstream is a taskwire endpoint with inline tools only, on httptest: the
// MCP server the gateway fronts.
type upstream struct {
	url string
	// held receives when a slow.build has reached its HoldAt step;
	// release lets it finish.
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	calls   atomic.Int64 // slow.build calls
	rpcs    atomic.Int64 // flaky.rpc calls
	headers chan http.Header
	// srvClose stops the upstream's HTTP server.
	srvClose func()
}

// newUpstream serves:
//   - slow.build: "step i of n" progress for each step, holding after
//     step HoldAt until release;
//   - fail.tool: an isError result;
//   - fail.rpc: a JSON-RPC error -32001;
//   - flaky.rpc: a JSON-RPC error on its first call, then a result;
//   - text.echo: its arguments back.
func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{held: make(chan struct{}, 8), release: make(chan struct{}), headers: make(chan http.Header, 64)}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "slow.build", Description: "Build in steps."},
		func(ctx context.Context, req *server.Request, in BuildIn) (*mcp.CallToolResult, BuildOut, error) {
			n := int(u.calls.Add(1))
			for i := 1; i <= in.Steps; i++ {
				_ = req.ReportProgress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps))
				if i == in.HoldAt {
					u.held <- struct{}{}
					select {
					case <-u.release:
					case <-ctx.Done():
						return nil, BuildOut{}, ctx.Err()
					}
				}
			}
			return nil, BuildOut{Steps: in.Steps, Call: n}, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "fail.tool"},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such branch"}}}, struct{}{}, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "fail.rpc"},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return nil, struct{}{}, mcp.NewError(-32001, "upstream refuses")
		})
	server.AddTool(ep, &mcp.Tool{Name: "flaky.rpc"},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, BuildOut, error) {
			if u.rpcs.Add(1) == 1 {
				return nil, BuildOut{}, mcp.NewError(-32001, "try again")
			}
			return nil, BuildOut{Steps: 0, Call: int(u.rpcs.Load())}, nil
		})
	type EchoIn struct {
		Text string `json:"text"`
	}
	server.AddTool(ep, &mcp.Tool{Name: "text.echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: new(true)}},
		func(_ context.Context, _ *server.Request, in EchoIn) (*mcp.CallToolResult, EchoIn, error) {
			return nil, in, nil
		})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case u.headers <- r.Header.Clone():
		default:
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.releaseAll()
		hs.Close()
		srv.Close()
	})
	u.url = hs.URL + "/mcp"
	u.srvClose = hs.Close
	return u
}

// releaseAll lets every held slow.build finish.
func (u *upstream) releaseAll() { u.once.Do(func() { close(u.release) }) }

// startGateway runs a gateway node in front of u on a new SQLite file and
// returns its MCP URL.
func startGateway(t *testing.T, opts gateway.Options) string {
	t.Helper()
	return startGatewayOn(t, opts, filepath.Join(t.TempDir(), "gateway.db")).url
}

// newClient is a project client of url negotiating versions (nil: the
// newest, 2026-07-28 with the Tasks extension).
func newClient(t *testing.T, url string, versions ...string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.Options{ProtocolVersions: versions, Token: func(context.Context) (string, error) { return "alice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// structured decodes a result's structuredContent.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	if res == nil || res.IsError {
		t.Fatalf("want a successful result, got %+v", res)
	}
	if err := json.Unmarshal(res.StructuredContent, &v); err != nil {
		t.Fatalf("structuredContent %s: %v", res.StructuredContent, err)
	}
	return v
}

// resultText is the text of a result's first content block.
func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
