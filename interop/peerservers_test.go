package interop

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// The peer servers offer the same two tools: add, which answers a sum as
// text and structured content, and fail, which answers a tool error.
type addArgs struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type sum struct {
	Sum int `json:"sum"`
}

// goSDKServer is an official go-sdk v1.8.0 server over Streamable HTTP on
// loopback.
func goSDKServer(t *testing.T) string {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "peer-gosdk", Version: "1.0.0"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *gosdk.CallToolRequest, in addArgs) (*gosdk.CallToolResult, sum, error) {
			return nil, sum{Sum: in.A + in.B}, nil
		})
	gosdk.AddTool(s, &gosdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *gosdk.CallToolRequest, struct{}) (*gosdk.CallToolResult, any, error) {
			return nil, nil, errors.New("this tool always fails")
		})
	srv := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// mcpGoServer is an mcp-go v1.2.1 server over Streamable HTTP on loopback.
func mcpGoServer(t *testing.T) string {
	s := mcpgoserver.NewMCPServer("peer-mcpgo", "1.0.0", mcpgoserver.WithToolCapabilities(false))
	s.AddTool(mcpgomcp.NewTool("add", mcpgomcp.WithDescription("Add two integers."),
		mcpgomcp.WithNumber("a", mcpgomcp.Required(), mcpgomcp.Description("the first addend")),
		mcpgomcp.WithNumber("b", mcpgomcp.Required(), mcpgomcp.Description("the second addend"))),
		func(_ context.Context, req mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
			a, errA := req.RequireInt("a")
			b, errB := req.RequireInt("b")
			if err := errors.Join(errA, errB); err != nil {
				return mcpgomcp.NewToolResultError(err.Error()), nil
			}
			return mcpgomcp.NewToolResultStructured(sum{Sum: a + b}, `{"sum":`+itoa(a+b)+`}`), nil
		})
	s.AddTool(mcpgomcp.NewTool("fail", mcpgomcp.WithDescription("Always fails.")),
		func(context.Context, mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
			return mcpgomcp.NewToolResultError("this tool always fails"), nil
		})
	srv := httptest.NewServer(mcpgoserver.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestClientAgainstPeerServers lists and calls tools with the client
// package on servers no one here wrote, negotiating freely and pinned to
// each 2025-era revision (the session fallback): the tools and their
// inputs, an inline result with its structured content, and a tool error
// as a result (isError), not a Go error.
func TestClientAgainstPeerServers(t *testing.T) {
	peers := []struct {
		name, url string
	}{
		{"go-sdk", goSDKServer(t) + "/"},
		{"mcp-go", mcpGoServer(t) + "/mcp"},
	}
	for _, peer := range peers {
		for _, versions := range [][]string{nil, {mcp.ProtocolVersion20251125}, {mcp.ProtocolVersion20250618}} {
			name := peer.name + "/" + strings.Join(versions, ",")
			if versions == nil {
				name = peer.name + "/negotiated"
			}
			t.Run(name, func(t *testing.T) { peerFlow(t, peer.url, versions) })
		}
	}
}

func peerFlow(t *testing.T, url string, versions []string) {
	c, err := client.New(url, client.Options{ProtocolVersions: versions})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Logf("negotiated %s with %+v", c.ProtocolVersion(), c.ServerInfo())
	if versions != nil && c.ProtocolVersion() != versions[0] {
		t.Errorf("negotiated %s, want %s", c.ProtocolVersion(), versions[0])
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"add", "fail"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	add, err := c.Tool(ctx, "add")
	if err != nil || add == nil {
		t.Fatalf("Tool(add): %v %v", add, err)
	}
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(add.InputSchema, &schema); err != nil || len(schema.Properties) != 2 {
		t.Errorf("add's input schema %s (%v)", add.InputSchema, err)
	}

	res, err := c.Call(ctx, "add", map[string]any{"a": 2, "b": 40})
	if err != nil || res.Result == nil {
		t.Fatalf("Call(add): %+v %v", res, err)
	}
	var got sum
	if err := json.Unmarshal(res.Result.StructuredContent, &got); err != nil || got.Sum != 42 || res.Result.IsError {
		t.Errorf("add: structuredContent %s (%v), isError %v", res.Result.StructuredContent, err, res.Result.IsError)
	}
	if len(res.Result.Content) == 0 {
		t.Error("add: no content")
	} else if text, ok := res.Result.Content[0].(*mcp.TextContent); !ok || !strings.Contains(text.Text, "42") {
		t.Errorf("add: content %#v", res.Result.Content[0])
	}

	res, err = c.Call(ctx, "fail", nil)
	if err != nil || res.Result == nil {
		t.Fatalf("Call(fail): %+v %v; a tool error is a result", res, err)
	}
	if text, _ := firstText(res.Result); !res.Result.IsError || !strings.Contains(text, "always fails") {
		t.Errorf("fail: isError %v, text %q", res.Result.IsError, text)
	}

	// A tool the server does not have is a JSON-RPC error (or, on some
	// servers, a tool error).
	res, err = c.Call(ctx, "missing", nil)
	var rpc *client.RPCError
	if !errors.As(err, &rpc) && (res == nil || res.Result == nil || !res.Result.IsError) {
		t.Errorf("Call(missing): %+v %v, want a JSON-RPC error or a tool error", res, err)
	}
}

func firstText(r *mcp.CallToolResult) (string, bool) {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "", false
}

// TestCLIAgainstPeerServers runs the taskwire binary's client commands
// against the peer servers: tools lists the inputs, call types a=2 b=40 by
// the schema and prints the result, and a tool error exits 1.
func TestCLIAgainstPeerServers(t *testing.T) {
	for _, peer := range []struct{ name, url string }{
		{"go-sdk", goSDKServer(t) + "/"},
		{"mcp-go", mcpGoServer(t) + "/mcp"},
	} {
		t.Run(peer.name, func(t *testing.T) {
			out, code := runTaskwire(t, "tools", "--url", peer.url)
			if code != 0 || !strings.Contains(out, "add\n  Add two integers.\n") || !strings.Contains(out, "the first addend") {
				t.Errorf("tools: exit %d\n%s", code, out)
			}
			out, code = runTaskwire(t, "call", "--url", peer.url, "add", "a=2", "b=40")
			if code != 0 || !strings.Contains(out, `"sum":42`) {
				t.Errorf("call add: exit %d\n%s", code, out)
			}
			out, code = runTaskwire(t, "call", "--url", peer.url, "fail")
			if code != 1 || !strings.Contains(out, "always fails") {
				t.Errorf("call fail: exit %d, want 1\n%s", code, out)
			}
		})
	}
}

// runTaskwire runs the binary with args and returns its combined output
// and exit code.
func runTaskwire(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, taskwireBin, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TASKWIRE_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("taskwire %q: %v\n%s", args, err, out)
	}
	return string(out), 0
}
