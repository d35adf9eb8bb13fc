package task_test

import (
	"strings"
	"testing"

	"github.com/taskwire/taskwire/task"
)

func TestTraceContextEncode(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	long := "k=" + strings.Repeat("v", task.MaxTraceContext)
	tests := []struct {
		name string
		tc   task.TraceContext
		want string
	}{
		{"zero", task.TraceContext{}, ""},
		{"parent only", task.TraceContext{Traceparent: parent}, parent},
		{"with state", task.TraceContext{Traceparent: parent, Tracestate: "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"},
			parent + " congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"},
		{"vendor key", task.TraceContext{Traceparent: parent, Tracestate: "t@sys=x"}, parent + " t@sys=x"},
		{"upper-case hex", task.TraceContext{Traceparent: strings.ToUpper(parent)}, ""},
		{"version ff", task.TraceContext{Traceparent: "ff" + parent[2:]}, ""},
		{"future version", task.TraceContext{Traceparent: "01" + parent[2:]}, ""},
		{"zero trace ID", task.TraceContext{Traceparent: "00-" + strings.Repeat("0", 32) + parent[35:]}, ""},
		{"zero parent ID", task.TraceContext{Traceparent: parent[:36] + strings.Repeat("0", 16) + parent[52:]}, ""},
		{"short", task.TraceContext{Traceparent: parent[:54]}, ""},
		{"trailing data", task.TraceContext{Traceparent: parent + "-00"}, ""},
		{"newline", task.TraceContext{Traceparent: parent[:54] + "\n"}, ""},
		{"state without equals dropped", task.TraceContext{Traceparent: parent, Tracestate: "nope"}, parent},
		{"state with newline dropped", task.TraceContext{Traceparent: parent, Tracestate: "a=b\nc"}, parent},
		{"state with upper-case key dropped", task.TraceContext{Traceparent: parent, Tracestate: "A=b"}, parent},
		{"oversized state dropped", task.TraceContext{Traceparent: parent, Tracestate: long}, parent},
		{"too many members dropped", task.TraceContext{Traceparent: parent,
			Tracestate: strings.TrimSuffix(strings.Repeat("a=b,", 33), ",")}, parent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tc.Encode()
			if got != tt.want {
				t.Fatalf("Encode() = %q, want %q", got, tt.want)
			}
			if len(got) > task.MaxTraceContext {
				t.Fatalf("Encode() is %d bytes, over the bound", len(got))
			}
			if got == "" {
				return
			}
			if back := task.DecodeTraceContext(got); back.Encode() != got {
				t.Fatalf("DecodeTraceContext(%q) = %+v, which does not encode back", got, back)
			}
		})
	}
}

func TestDecodeTraceContextRejectsWhatEncodeWouldNotWrite(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, s := range []string{"", "garbage", parent + " ", parent + " A=b", " " + parent, parent + " a=b" + strings.Repeat("c", task.MaxTraceContext)} {
		if got := task.DecodeTraceContext(s); got != (task.TraceContext{}) {
			t.Errorf("DecodeTraceContext(%q) = %+v, want zero", s, got)
		}
	}
	if got := task.DecodeTraceContext(parent + " a=b"); got.Traceparent != parent || got.Tracestate != "a=b" {
		t.Errorf("DecodeTraceContext = %+v", got)
	}
}
