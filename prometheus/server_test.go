package prometheus_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/server"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// newEchoServer returns a server with one endpoint ("tools") and one tool
// ("echo"), reporting to m.
func newEchoServer(t testing.TB, m *twprom.ServerMetrics) *server.Server {
	t.Helper()
	return newEchoServerWith(t, server.Options{Metrics: m, Observer: m.Observer()})
}

// newEchoServerWith is newEchoServer with the given options, endpoints
// aside.
func newEchoServerWith(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "tools", Version: "1"})
	server.AddTool(ep, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *server.Request, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Echo: in.Text}, nil
		})
	opts.Endpoints = []*server.Endpoint{ep}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestServerMetrics checks the request, tool call and rejection series of
// a real server after real requests, their label sets, and that the
// in-flight gauge returns to zero.
func TestServerMetrics(t *testing.T) {
	reg := twprom.NewRegistry()
	m, err := twprom.NewServerMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := newEchoServer(t, m)
	ctx := context.Background()
	c := mcptest.NewClient(srv, "/mcp")
	for _, tool := range []string{"echo", "echo", "a-name-only-the-client-knows"} {
		if _, err := c.CallTool(ctx, tool, echoIn{Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Call(ctx, "tools/list", nil); err != nil {
		t.Fatal(err)
	}
	bad := mcptest.NewClient(srv, "/mcp")
	bad.ProtocolVersion = "1999-01-01"
	r, err := bad.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}

	f := scrape(t, twprom.Handler(reg))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"taskwire_server_requests_total", []string{"endpoint", "tools", "method", "tools/call", "outcome", "complete"}, 2},
		{"taskwire_server_requests_total", []string{"method", "tools/call", "outcome", "protocol_error"}, 1},
		{"taskwire_server_requests_total", []string{"method", "tools/list", "outcome", "complete"}, 1},
		{"taskwire_server_request_duration_seconds", []string{"method", "tools/call"}, 3},
		{"taskwire_server_tool_calls_total", []string{"endpoint", "tools", "tool", "echo", "outcome", "complete"}, 2},
		{"taskwire_server_tool_calls_total", []string{"tool", "unknown", "outcome", "protocol_error"}, 1},
		{"taskwire_server_tool_call_duration_seconds", []string{"tool", "echo"}, 2},
		{"taskwire_server_requests_in_flight", []string{"method", "tools/call"}, 0},
		{"taskwire_server_rejections_total", []string{"endpoint", "tools", "status", strconv.Itoa(r.Status)}, 1},
	} {
		if got, ok := f.Value(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for name, want := range map[string][][]string{
		"taskwire_server_requests_total":             {{"endpoint", "method", "outcome"}},
		"taskwire_server_request_duration_seconds":   {{"endpoint", "method"}},
		"taskwire_server_requests_in_flight":         {{"endpoint", "method"}},
		"taskwire_server_tool_calls_total":           {{"endpoint", "outcome", "tool"}},
		"taskwire_server_tool_call_duration_seconds": {{"endpoint", "tool"}},
		"taskwire_server_rejections_total":           {{"endpoint", "status"}},
	} {
		if d := cmp.Diff(want, f.LabelNames(name)); d != "" {
			t.Errorf("%s label names (-want +got):\n%s", name, d)
		}
	}
	for _, s := range f.Series("taskwire_") {
		if strings.Contains(s, "a-name-only-the-client-knows") {
			t.Errorf("a client's tool name became a label: %s", s)
		}
	}
}

// TestServerGaugesRegistered checks the scrape-time gauges of a server.
func TestServerGaugesRegistered(t *testing.T) {
	reg := twprom.NewRegistry()
	m, err := twprom.NewServerMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := newEchoServer(t, m)
	if err := twprom.RegisterServerGauges(reg, srv); err != nil {
		t.Fatal(err)
	}
	f := scrape(t, twprom.Handler(reg))
	for _, name := range []string{"taskwire_server_listen_streams", "taskwire_server_live_sessions"} {
		if v, ok := f.Value(name); !ok || v != 0 {
			t.Errorf("%s = %v (found %v), want 0", name, v, ok)
		}
	}
	if err := twprom.RegisterServerGauges(reg, nil); err == nil {
		t.Error("RegisterServerGauges(nil) succeeded")
	}
}
