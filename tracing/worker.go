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
// Like StartRequest it gives the span its attributes when it ends, in one
// call from a pooled buffer (a sampler sees the span's name, its kind and
// its link), keeps what starting the span needs in the runSpan it returns,
// and uses the final write's event options made once.
func (t *Tracer) StartRun(ctx context.Context, r worker.TracedRun) (context.Context, worker.RunSpan) {
	s := &runSpan{t: t, run: r}
	opts := append(s.opts[:0], t.consumerKind, t.newRoot)
	if r.Creator.Traceparent != "" {
		s.carrier = w3cCarrier{traceparent: r.Creator.Traceparent, tracestate: r.Creator.Tracestate}
		if sc := trace.SpanContextFromContext(t.prop.Extract(context.Background(), &s.carrier)); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	ctx, s.span = t.tracer.Start(ctx, RunSpanName, opts...)
	return ctx, s
}

// maxRunAttrs bounds the attributes a run span gets: kind, attempt,
// failures, interrupted runs, transition, error type and task ID.
const maxRunAttrs = 7

// runAttrs holds a run span's attributes while End hands them to the
// span, which copies them; the Tracer pools them.
type runAttrs [maxRunAttrs]attribute.KeyValue

// runSpan is the span of one run, with room for what starting it needs
// and what ending it records.
type runSpan struct {
	t          *Tracer
	run        worker.TracedRun
	span       trace.Span
	carrier    w3cCarrier
	opts       [3]trace.SpanStartOption
	transition worker.Transition
	failure    worker.FailureCategory
}

func (s *runSpan) Progress() { s.span.AddEvent(EventProgress) }

func (s *runSpan) Failed(c worker.FailureCategory) {
	s.span.AddEvent(EventHandlerFailed, trace.WithAttributes(attribute.String(AttrFailure, string(c))))
	s.failure = c
}

func (s *runSpan) LeaseLost() {
	s.span.AddEvent(EventLeaseLost)
	s.span.SetStatus(codes.Error, EventLeaseLost)
}

func (s *runSpan) Wrote(tr worker.Transition, err error) {
	write := writeCommitted
	switch {
	case errors.Is(err, backend.ErrLeaseLost):
		write = writeLeaseLost
	case err != nil:
		write = writeError
	}
	s.span.AddEvent(EventFinalWrite, s.t.finalWrites.option(tr, write))
	s.transition = tr
	if err != nil || tr == worker.TransitionFailed {
		s.span.SetStatus(codes.Error, string(tr)+": "+write)
	}
}

func (s *runSpan) End() {
	buf := s.t.runAttrs.Get().(*runAttrs)
	attrs := append(buf[:0],
		attribute.String(AttrKind, s.run.Kind),
		attribute.Int64(AttrAttempt, s.run.Attempt),
		attribute.Int(AttrFailures, s.run.Failures),
		attribute.Int(AttrInterruptedRuns, s.run.InterruptedRuns))
	if s.transition != "" {
		attrs = append(attrs, attribute.String(AttrTransition, string(s.transition)))
	}
	if s.failure != "" {
		attrs = append(attrs, attribute.String(AttrErrorType, string(s.failure)))
	}
	if s.t.opts.RecordTaskIDs {
		attrs = append(attrs, attribute.String(AttrTaskID, s.run.TaskID))
	}
	s.span.SetAttributes(attrs...)
	clear(attrs) // the rest of buf is still zero
	s.t.runAttrs.Put(buf)
	s.span.End()
}

// What a final write did, as AttrWrite values.
const (
	writeCommitted = "committed"
	writeLeaseLost = "lease_lost"
	writeError     = "error"
)

// finalWrites holds the options of the final_write event for every known
// transition and write outcome, made once; an unknown transition gets
// its options made on the spot.
type finalWrites map[[2]string]trace.EventOption

// newFinalWrites makes the options of every known final write.
func newFinalWrites() finalWrites {
	f := finalWrites{}
	for _, tr := range []worker.Transition{
		worker.TransitionClaimed, worker.TransitionCompleted, worker.TransitionFailed, worker.TransitionCancelled,
		worker.TransitionRetried, worker.TransitionInputRequested, worker.TransitionLeaseLost, worker.TransitionReleased,
		worker.TransitionRescued, worker.TransitionExpiredDeleted,
	} {
		for _, w := range []string{writeCommitted, writeLeaseLost, writeError} {
			f[[2]string{string(tr), w}] = finalWriteOption(tr, w)
		}
	}
	return f
}

// option returns the event options of a final write.
func (f finalWrites) option(tr worker.Transition, write string) trace.EventOption {
	if o, ok := f[[2]string{string(tr), write}]; ok {
		return o
	}
	return finalWriteOption(tr, write)
}

func finalWriteOption(tr worker.Transition, write string) trace.EventOption {
	return trace.WithAttributes(attribute.String(AttrTransition, string(tr)), attribute.String(AttrWrite, write))
}
