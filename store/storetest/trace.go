package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// testTraceContext checks that the creation's trace context is kept with
// the task, by Enqueue and EnqueueBatch alike, and handed to every claim of
// its job: a valid one as it was, a tracestate too long for the bound
// without the tracestate, and an invalid one not at all.
func testTraceContext(t *testing.T, open opener) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name string
		in   task.TraceContext
		want task.TraceContext
	}{
		{"none", task.TraceContext{}, task.TraceContext{}},
		{"parent", task.TraceContext{Traceparent: parent}, task.TraceContext{Traceparent: parent}},
		{"parent and state", task.TraceContext{Traceparent: parent, Tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
			task.TraceContext{Traceparent: parent, Tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}},
		{"oversized state", task.TraceContext{Traceparent: parent, Tracestate: "k=" + strings.Repeat("v", task.MaxTraceContext)},
			task.TraceContext{Traceparent: parent}},
		{"invalid parent", task.TraceContext{Traceparent: "00-not-a-trace-01", Tracestate: "a=b"}, task.TraceContext{}},
	}
	b, c := open(t)
	ctx := context.Background()
	want := map[string]task.TraceContext{}
	var batch []backend.BatchItem
	for _, tt := range tests {
		cc := creation(t, endpointA, tenantA, toolA, `{"n":1}`)
		cc.Trace = tt.in
		tk, err := b.Enqueue(ctx, cc, backend.EnqueueOptions{})
		if err != nil {
			t.Fatalf("%s: Enqueue: %v", tt.name, err)
		}
		want[tk.ID()] = tt.want
		bc := creation(t, endpointA, tenantA, toolA, `{"n":2}`)
		bc.Trace = tt.in
		batch = append(batch, backend.BatchItem{Creation: bc})
	}
	if be, ok := b.(backend.BatchEnqueuer); ok {
		tasks, err := be.EnqueueBatch(ctx, batch)
		if err != nil {
			t.Fatalf("EnqueueBatch: %v", err)
		}
		for i, tk := range tasks {
			want[tk.ID()] = tests[i].want
		}
	}
	got := map[string]task.TraceContext{}
	for _, j := range claim(t, b, c, len(want)+1) {
		got[j.TaskID] = j.Trace
		// The next claim of the same job (after a retry) sees it too.
		if err := b.Jobs().Retry(ctx, j.Lease, c.Now(), "again", ""); err != nil {
			t.Fatalf("Retry: %v", err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("claimed trace contexts (-want +got):\n%s", diff)
	}
	for _, j := range claim(t, b, c, len(want)+1) {
		if j.Trace != want[j.TaskID] {
			t.Errorf("second claim of %s: trace %+v, want %+v", j.TaskID, j.Trace, want[j.TaskID])
		}
	}
}
