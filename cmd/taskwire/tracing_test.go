package main

import (
	"path/filepath"
	"testing"

	"github.com/taskwire/taskwire/internal/otlptest"
	"github.com/taskwire/taskwire/mcp"
)

// TestServeExportsTraces starts the serve wiring with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a loopback receiver: the tools/call
// that creates a task and the worker's run of it, linked to it, are
// exported under the default service name by the time the node has shut
// down.
func TestServeExportsTraces(t *testing.T) {
	recv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")

	n, err := startNode(t.Context(), testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, n.URL())
	id := createTask(t, c, toolReports, map[string]any{"accountId": "traced", "rows": 1, "seconds": 0})
	waitStatus(t, c, id, mcp.TaskCompleted)
	if err := n.Shutdown(); err != nil { // flushes the batched spans
		t.Fatal(err)
	}

	if recv.Requests() == 0 {
		t.Fatal("no export reached the receiver")
	}
	calls, runs := recv.Named("mcp tools/call"), recv.Named("taskwire.job run")
	if len(calls) != 1 || len(runs) != 1 {
		t.Fatalf("exported %d tools/call and %d run spans, want 1 and 1: %+v", len(calls), len(runs), recv.Spans())
	}
	if len(runs[0].Links) != 1 || runs[0].Links[0] != calls[0].SpanID {
		t.Errorf("run span links %v, want the tools/call span %s", runs[0].Links, calls[0].SpanID)
	}
	for _, s := range recv.Spans() {
		if s.Service != "taskwire" {
			t.Errorf("span %q has service.name %q, want taskwire", s.Name, s.Service)
		}
	}
}
