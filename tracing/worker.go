package tracing

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/worker"
)

// RunSpanName is the name of every run span.
const RunSpanName = "taskwire.job run"

// Attribute keys of run spans and their events.
const (
	AttrKind            = "taskwire.job.kind"
	AttrAttempt         = "taskwire.job.attempt"
	AttrFailures        = "taskwire.job.failures"
	AttrInterruptedRuns = "taskwire.job.interrupted_runs"
	AttrTransition      = "taskwire.job.transition"
	AttrFailure         = "taskwire.job.failure"
	AttrWrite           = "taskwire.job.write"
)

// Events of run spans.
const (
	// EventProgress: a progress report was written.
	EventProgress = "progress"
	// EventHandlerFailed: the handler failed; AttrFailure names the
	// category.
	EventHandlerFailed = "handler_failed"
	// EventLeaseLost: the lease ended while the handler ran.
	EventLeaseLost = "lease_lost"
	// EventFinalWrite: the run's final write; AttrTransition names what
	// it did (completed, failed, cancelled, retried, input_requested,
	// released) and AttrWrite whether it committed ("committed"), met a
	// lost lease ("lease_lost") or failed ("error").
	EventFinalWrite = "final_write"
)

// StartRun implements worker.Tracer: a consumer span named RunSpanName
// that starts its own trace and links to the span of the request that
// created the task, when the task kept its trace context.
//
// Like StartRequest it keeps what starting the span needs in the runSpan
// it returns rather than allocating it apart.
func (t *Tracer) StartRun(ctx context.Context, r worker.TracedRun) (context.Context, worker.RunSpan) {
	s := &runSpan{}
	attrs := append(s.attrs[:0],
		attribute.String(AttrKind, r.Kind),
		attribute.Int64(AttrAttempt, r.Attempt),
		attribute.Int(AttrFailures, r.Failures),
		attribute.Int(AttrInterruptedRuns, r.InterruptedRuns))
	if t.opts.RecordTaskIDs {
		attrs = append(attrs, attribute.String(AttrTaskID, r.TaskID))
	}
	opts := append(s.opts[:0], t.consumerKind, t.newRoot, trace.WithAttributes(attrs...))
	if r.Creator.Traceparent != "" {
		s.carrier = w3cCarrier{traceparent: r.Creator.Traceparent, tracestate: r.Creator.Tracestate}
		if sc := trace.SpanContextFromContext(t.prop.Extract(context.Background(), &s.carrier)); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	ctx, s.span = t.tracer.Start(ctx, RunSpanName, opts...)
	return ctx, s
}

// runSpan is the span of one run, with room for what starting it needs.
type runSpan struct {
	span    trace.Span
	carrier w3cCarrier
	opts    [4]trace.SpanStartOption
	attrs   [5]attribute.KeyValue
}

func (s *runSpan) Progress() { s.span.AddEvent(EventProgress) }

func (s *runSpan) Failed(c worker.FailureCategory) {
	s.span.AddEvent(EventHandlerFailed, trace.WithAttributes(attribute.String(AttrFailure, string(c))))
	s.span.SetAttributes(attribute.String(AttrErrorType, string(c)))
}

func (s *runSpan) LeaseLost() {
	s.span.AddEvent(EventLeaseLost)
	s.span.SetStatus(codes.Error, EventLeaseLost)
}

func (s *runSpan) Wrote(tr worker.Transition, err error) {
	write := "committed"
	switch {
	case errors.Is(err, backend.ErrLeaseLost):
		write = "lease_lost"
	case err != nil:
		write = "error"
	}
	s.span.AddEvent(EventFinalWrite, trace.WithAttributes(attribute.String(AttrTransition, string(tr)), attribute.String(AttrWrite, write)))
	s.span.SetAttributes(attribute.String(AttrTransition, string(tr)))
	if err != nil || tr == worker.TransitionFailed {
		s.span.SetStatus(codes.Error, string(tr)+": "+write)
	}
}

func (s *runSpan) End() { s.span.End() }
