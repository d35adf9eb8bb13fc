package tracing_test

import (
	"context"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// countingExporter discards spans, counting them.
type countingExporter struct{ n atomic.Int64 }

func (e *countingExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	e.n.Add(int64(len(s)))
	return nil
}
func (e *countingExporter) Shutdown(context.Context) error { return nil }

// newEchoServer returns a server with an inline echo tool, closed when tb
// ends.
func newEchoServer(tb testing.TB, opts server.Options) *server.Server {
	tb.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "tools", Version: "1"})
	server.AddTool(ep, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *server.Request, in EchoIn) (*mcp.CallToolResult, EchoOut, error) {
			return nil, EchoOut(in), nil
		})
	opts.Endpoints = []*server.Endpoint{ep}
	srv, err := server.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}
