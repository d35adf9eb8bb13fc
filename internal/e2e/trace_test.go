package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/otlptest"
	"github.com/taskwire/taskwire/mcp"
)

// TestTraceAcrossProcesses runs an API-only `taskwire serve --workers 0`
// and a separate `taskwire worker` on one SQLite file, each exporting
// spans to a loopback OTLP receiver under its own service name. The
// worker process's run span links to the API process's tools/call span:
// the link can only have come through the trace context stored with the
// task.
func TestTraceAcrossProcesses(t *testing.T) {
	recv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "tasks.db")
	t.Setenv("OTEL_SERVICE_NAME", "api")
	api := startProc(t, "serve-api", "serve", "--addr", "127.0.0.1:0", "--store", store, "--workers", "0",
		"--log-level", "warn", "--shutdown-grace", "2s")
	t.Setenv("OTEL_SERVICE_NAME", "worker")
	w := startProc(t, "worker", "worker", "--store", store, "--workers", "1", "--reports-dir", filepath.Join(dir, "reports"),
		"--log-level", "warn", "--shutdown-grace", "2s")
	c := newClient(t, api.url, "acme")

	id := c.createReport(t, map[string]any{"accountId": "traced", "rows": 3, "seconds": 0})
	if g := c.awaitTerminal(t, id, 20*time.Second); g.Status != mcp.TaskCompleted {
		t.Fatalf("task ended %q", g.Status)
	}
	api.stop(t) // each flushes its batched spans on the way out
	w.stop(t)

	var call, run *otlptest.Span
	for _, s := range recv.Spans() {
		switch {
		case s.Name == "mcp tools/call" && s.Service == "api":
			call = &s
		case s.Name == "taskwire.job run" && s.Service == "worker":
			run = &s
		}
	}
	if call == nil || run == nil {
		t.Fatalf("want a tools/call span from the API process and a run span from the worker; got %+v", recv.Spans())
	}
	if len(run.Links) != 1 || run.Links[0] != call.SpanID {
		t.Errorf("run span links %v, want the tools/call span %s", run.Links, call.SpanID)
	}
	if run.TraceID == call.TraceID {
		t.Errorf("run span is in the call's trace %s; want its own trace, linked", call.TraceID)
	}
}
