package tracing_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/tracing"
)

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
	clientHeader = "00-" + clientTrace + "-" + clientParent + "-01"
)

var stores = []struct {
	name string
	open func(t *testing.T) (api, worker backend.Store)
}{
	{"sqlite", twoSQLiteHandles},
	{"postgres", twoPostgresHandles},
}

// TestRunLinkedToCreatingCall follows a task from the tools/call that
// created it, on an API node, to its run on a worker with its own store
// handle and its own tracer provider, as another process has: the call's
// span continues the client's trace, and the run's span starts a trace of
// its own linked to the call's span. Neither carries a task ID, the
// arguments or the principal.
func TestRunLinkedToCreatingCall(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			apiStore, workerStore := st.open(t)
			a := newAPI(t, apiStore, tracing.Options{})
			runs := startWorker(t, workerStore, tracing.Options{})

			a.createTask(t, "secret words", http.Header{"Traceparent": {clientHeader}, "Tracestate": {"vendor=abc"}})
			call := a.spans.await(t, "mcp tools/call")
			if got := call.Parent(); got.TraceID().String() != clientTrace || got.SpanID().String() != clientParent || !got.IsRemote() {
				t.Errorf("call span's parent = %v %v, want the client's span", got.TraceID(), got.SpanID())
			}
			if call.SpanKind() != trace.SpanKindServer {
				t.Errorf("call span kind = %v", call.SpanKind())
			}
			want := map[string]string{
				tracing.AttrMethod: mcp.MethodToolsCall, tracing.AttrTool: toolEcho, tracing.AttrOutcome: "task",
				tracing.AttrEra: tracing.Era2026, tracing.AttrProtocolVersion: mcp.LatestProtocolVersion,
				tracing.AttrEndpoint: "traced",
			}
			if diff := cmp.Diff(want, attrs(call.Attributes())); diff != "" {
				t.Errorf("call span attributes (-want +got):\n%s", diff)
			}

			run := runs.await(t, tracing.RunSpanName)
			if len(run.Links()) != 1 {
				t.Fatalf("run span has %d links, want 1", len(run.Links()))
			}
			link := run.Links()[0].SpanContext
			if link.TraceID() != call.SpanContext().TraceID() || link.SpanID() != call.SpanContext().SpanID() {
				t.Errorf("run links to %v %v, want the call's span %v %v", link.TraceID(), link.SpanID(),
					call.SpanContext().TraceID(), call.SpanContext().SpanID())
			}
			if got := link.TraceState().Get("vendor"); got != "abc" {
				t.Errorf("link tracestate vendor = %q, want the client's", got)
			}
			if run.Parent().IsValid() || run.SpanContext().TraceID() == call.SpanContext().TraceID() {
				t.Errorf("run span is in the call's trace; want a trace of its own, linked")
			}
			if run.SpanKind() != trace.SpanKindConsumer {
				t.Errorf("run span kind = %v", run.SpanKind())
			}
			wantRun := map[string]string{
				tracing.AttrKind: toolEcho, tracing.AttrAttempt: "1", tracing.AttrFailures: "0",
				tracing.AttrInterruptedRuns: "0", tracing.AttrTransition: "completed",
			}
			if diff := cmp.Diff(wantRun, attrs(run.Attributes())); diff != "" {
				t.Errorf("run span attributes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"final_write completed committed"}, events(run)); diff != "" {
				t.Errorf("run span events (-want +got):\n%s", diff)
			}
		})
	}
}

// events returns a span's events as "name transition write" or "name".
func events(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		a := attrs(e.Attributes)
		out = append(out, strings.TrimSpace(strings.Join([]string{e.Name, a[tracing.AttrTransition], a[tracing.AttrFailure], a[tracing.AttrWrite]}, " ")))
	}
	for i, e := range out {
		out[i] = strings.Join(strings.Fields(e), " ")
	}
	return out
}

// TestOptInAttributes checks that the task ID, the identity and the
// arguments are recorded when, and only when, the application asks.
func TestOptInAttributes(t *testing.T) {
	apiStore, workerStore := twoSQLiteHandles(t)
	opts := tracing.Options{RecordTaskIDs: true, RecordIdentity: true, RecordArguments: true}
	a := newAPI(t, apiStore, opts)
	runs := startWorker(t, workerStore, opts)
	id := a.createTask(t, "visible words", nil)
	got := attrs(a.spans.await(t, "mcp tools/call").Attributes())
	for k, want := range map[string]string{
		tracing.AttrTaskID: id, tracing.AttrPrincipal: "alice", tracing.AttrTenant: "alice",
		tracing.AttrArguments: `{"text":"visible words"}`,
	} {
		if got[k] != want {
			t.Errorf("call span %s = %q, want %q", k, got[k], want)
		}
	}
	if got := attrs(runs.await(t, tracing.RunSpanName).Attributes())[tracing.AttrTaskID]; got != id {
		t.Errorf("run span task ID = %q, want %q", got, id)
	}
}

// TestIncomingTraceContext checks which incoming trace context a request
// span continues: _meta's over the header's, none when it is invalid, and
// that a tracestate too long to store leaves the run linked without it.
func TestIncomingTraceContext(t *testing.T) {
	const otherHeader = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var members []string
	for i := range 20 {
		members = append(members, fmt.Sprintf("k%02d=%s", i, strings.Repeat("v", 40)))
	}
	bigState := strings.Join(members, ",") // about 900 bytes: over the stored bound
	apiStore, workerStore := twoSQLiteHandles(t)
	a := newAPI(t, apiStore, tracing.Options{})
	runs := startWorker(t, workerStore, tracing.Options{})

	t.Run("invalid header ignored", func(t *testing.T) {
		a.createTask(t, "x", http.Header{"Traceparent": {"00-" + strings.Repeat("z", 32) + "-" + clientParent + "-01"}})
		call := a.spans.await(t, "mcp tools/call")
		if call.Parent().IsValid() {
			t.Errorf("call span has parent %v; an invalid traceparent must be ignored", call.Parent())
		}
		run := runs.await(t, tracing.RunSpanName)
		if len(run.Links()) != 1 || run.Links()[0].SpanContext.SpanID() != call.SpanContext().SpanID() {
			t.Errorf("run is not linked to the call: %v", run.Links())
		}
	})
	t.Run("meta wins over header", func(t *testing.T) {
		r, err := a.client.Call(t.Context(), mcp.MethodToolsCall, map[string]any{"name": toolEcho,
			"arguments": map[string]any{"text": "y"}, "_meta": map[string]any{"traceparent": clientHeader}})
		if err != nil || r.Error != nil {
			t.Fatalf("tools/call: %v %v", err, r.Error)
		}
		call := a.spans.await(t, "mcp tools/call")
		if call.Parent().TraceID().String() != clientTrace {
			t.Errorf("call span parent trace = %v, want _meta's %s", call.Parent().TraceID(), clientTrace)
		}
		runs.await(t, tracing.RunSpanName)
	})
	t.Run("oversized tracestate not stored", func(t *testing.T) {
		a.createTask(t, "z", http.Header{"Traceparent": {otherHeader}, "Tracestate": {bigState}})
		call := a.spans.await(t, "mcp tools/call")
		if call.SpanContext().TraceState().Len() != 20 {
			t.Fatalf("call span tracestate has %d members, want the client's 20", call.SpanContext().TraceState().Len())
		}
		run := runs.await(t, tracing.RunSpanName)
		if len(run.Links()) != 1 {
			t.Fatalf("run span has %d links, want 1", len(run.Links()))
		}
		link := run.Links()[0].SpanContext
		if link.SpanID() != call.SpanContext().SpanID() || link.TraceState().Len() != 0 {
			t.Errorf("run link = %v with %d tracestate members, want the call's span without its tracestate",
				link.SpanID(), link.TraceState().Len())
		}
	})
}

// TestRunEvents checks the events of runs: a run that reports progress
// and fails is retried, and the next asks for input; both are linked to
// the one call that created the task.
func TestRunEvents(t *testing.T) {
	apiStore, workerStore := twoSQLiteHandles(t)
	a := newAPI(t, apiStore, tracing.Options{})
	runs := startWorker(t, workerStore, tracing.Options{})
	a.createTaskOf(t, toolFlaky, "x", nil)
	call := a.spans.await(t, "mcp tools/call")
	first, second := runs.await(t, tracing.RunSpanName), runs.await(t, tracing.RunSpanName)
	// The first run's span ends after its final write commits, and the
	// retry can be claimed, run and ended in between: spans end in either
	// order, so tell them apart by attempt.
	if attrs(first.Attributes())[tracing.AttrAttempt] == "2" {
		first, second = second, first
	}
	if diff := cmp.Diff([]string{"progress", "handler_failed handler_error", "final_write retried committed"}, events(first)); diff != "" {
		t.Errorf("first run's events (-want +got):\n%s", diff)
	}
	if got := attrs(first.Attributes())[tracing.AttrErrorType]; got != "handler_error" {
		t.Errorf("first run's error.type = %q", got)
	}
	if diff := cmp.Diff([]string{"final_write input_requested committed"}, events(second)); diff != "" {
		t.Errorf("second run's events (-want +got):\n%s", diff)
	}
	if got := attrs(second.Attributes()); got[tracing.AttrAttempt] != "2" || got[tracing.AttrFailures] != "1" {
		t.Errorf("second run's attempt and failures = %s, %s", got[tracing.AttrAttempt], got[tracing.AttrFailures])
	}
	for _, run := range []sdktrace.ReadOnlySpan{first, second} {
		if len(run.Links()) != 1 || run.Links()[0].SpanContext.SpanID() != call.SpanContext().SpanID() {
			t.Errorf("run not linked to the call: %v", run.Links())
		}
	}
}

// TestNewRequiresProvider checks option validation.
func TestNewRequiresProvider(t *testing.T) {
	if _, err := tracing.New(tracing.Options{}); err == nil {
		t.Fatal("New without a Provider succeeded")
	}
}
