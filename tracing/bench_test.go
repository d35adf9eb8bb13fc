package tracing_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/tracing"
)

// countingExporter discards spans, counting them.
type countingExporter struct{ n atomic.Int64 }

func (e *countingExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	e.n.Add(int64(len(s)))
	return nil
}
func (e *countingExporter) Shutdown(context.Context) error { return nil }

// BenchmarkToolsCallTracing compares an inline 2026-07-28 tools/call of
// an echo tool without a tracer and with the OpenTelemetry tracer (the
// SDK's batch processor feeding an exporter that discards), in process
// (ServeHTTP with a recorder), the request carrying a traceparent. -count
// interleaves the two:
//
//	go test -run '^$' -bench ToolsCallTracing -benchtime 2s -count 5 ./tracing
func BenchmarkToolsCallTracing(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	header := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {"echo"},
		"Traceparent":          {clientHeader},
	}
	for _, variant := range []string{"none", "otel"} {
		b.Run(variant, func(b *testing.B) {
			var (
				opts server.Options
				exp  countingExporter
				tp   *sdktrace.TracerProvider
			)
			if variant == "otel" {
				tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(&exp))
				defer tp.Shutdown(context.Background())
				tr, err := tracing.New(tracing.Options{Provider: tp})
				if err != nil {
					b.Fatal(err)
				}
				opts.Tracer = tr
			}
			srv := newEchoServer(b, opts)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
				r.Header = header.Clone()
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.StopTimer()
			if tp != nil {
				tp.ForceFlush(context.Background())
				// The batch processor drops spans when its queue is full,
				// so most, not all, are exported under load.
				if exp.n.Load() == 0 {
					b.Fatal("no span exported")
				}
			}
		})
	}
}

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
