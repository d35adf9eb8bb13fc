package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/taskwire/taskwire/mcp"
)

// otlpReceiver is a loopback OTLP/HTTP trace receiver: it accepts POST
// /v1/traces and keeps the service names and span names it was sent.
type otlpReceiver struct {
	mu       sync.Mutex
	requests int
	services []string
	spans    []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, 4<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.requests++
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				o.services = append(o.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				o.spans = append(o.spans, s.Name)
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestServeExportsTraces starts the serve wiring with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a loopback receiver: the tools/call
// that creates a task and the worker's run of it are exported, under the
// default service name, by the time the node has shut down.
func TestServeExportsTraces(t *testing.T) {
	recv := &otlpReceiver{}
	ts := httptest.NewServer(recv)
	defer ts.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ts.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")

	ctx := t.Context()
	n, err := startNode(ctx, testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, n.URL())
	id := createTask(t, c, toolReports, map[string]any{"accountId": "traced", "rows": 1, "seconds": 0})
	waitStatus(t, c, id, mcp.TaskCompleted)
	if err := n.Shutdown(); err != nil { // flushes the batched spans
		t.Fatal(err)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if recv.requests == 0 {
		t.Fatal("no export reached the receiver")
	}
	for _, want := range []string{"mcp tools/call", "taskwire.job run"} {
		if !slices.Contains(recv.spans, want) {
			t.Errorf("exported spans %v lack %q", recv.spans, want)
		}
	}
	for _, s := range recv.services {
		if s != "taskwire" {
			t.Errorf("service.name = %q, want taskwire", s)
		}
	}
}

// TestServeWithoutOTLPEndpointTracesNothing checks that without an
// endpoint the node installs no tracing at all.
func TestServeWithoutOTLPEndpointTracesNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	n := start(t, testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	if n.trace != nil {
		t.Fatal("a node without an OTLP endpoint installed tracing")
	}
}
