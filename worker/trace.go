package worker

import (
	"context"

	"github.com/taskwire/taskwire/task"
)

// Tracer traces the runs of jobs: StartRun is called once for every claimed
// job the runtime starts (also one it only cancels or releases), and the
// span it returns is ended exactly once, after the run's final write. The
// context StartRun returns is the run's from then on: the handler's context
// derives from it, so a handler's own spans can be children of the run's.
// The tracing package implements it with OpenTelemetry; the runtime itself
// depends on no tracing library.
//
// Calls run on the runtime's goroutines and must return quickly. A Tracer
// must be safe for concurrent use; one RunSpan is used by one run only,
// though not always from one goroutine (progress writes run beside the
// handler).
type Tracer interface {
	StartRun(ctx context.Context, r TracedRun) (context.Context, RunSpan)
}

// TracedRun describes one run of a job to a Tracer. Kind and the counts
// are bounded; TaskID is not, and a Tracer records it only when its
// application asks for it.
type TracedRun struct {
	// Kind is the job's kind if registered on the runtime, or "unknown".
	Kind string
	// TaskID is the job's task.
	TaskID string
	// Attempt is the claim's attempt counter (1 for the first claim).
	Attempt int64
	// Failures and InterruptedRuns count the job's earlier runs that
	// failed or ended without an outcome.
	Failures, InterruptedRuns int
	// Creator is the trace context of the request that created the task
	// (backend.JobRow.Trace), zero when none was stored. A run's span
	// links to it rather than being its child: the run may happen long
	// after the request ended, and many runs link to one request.
	Creator task.TraceContext
}

// RunSpan is the span of one run of a job. Its methods record events; none
// carries error text, task data or arguments.
type RunSpan interface {
	// Progress records one progress report written to the store (reports
	// are coalesced before they are written, so this is bounded by the
	// store writes, not by the handler's calls).
	Progress()
	// Failed records that the handler failed, by category, whether the
	// job is retried or not.
	Failed(c FailureCategory)
	// LeaseLost records that the lease ended while the handler ran: its
	// outcome is dropped and nothing is written.
	LeaseLost()
	// Wrote records the run's final write: the transition it makes
	// (TransitionCompleted, TransitionFailed, TransitionCancelled,
	// TransitionRetried, TransitionInputRequested, TransitionReleased)
	// and the write's error: nil when it committed, one matching
	// backend.ErrLeaseLost when the lease was lost first, or another
	// store error.
	Wrote(t Transition, err error)
	// End ends the span.
	End()
}

type nopRunSpan struct{}

func (nopRunSpan) Progress()               {}
func (nopRunSpan) Failed(FailureCategory)  {}
func (nopRunSpan) LeaseLost()              {}
func (nopRunSpan) Wrote(Transition, error) {}
func (nopRunSpan) End()                    {}

// runSpanKey is the context key of the run's RunSpan.
type runSpanKey struct{}

// startRun starts the span of a run and returns the run's base context,
// which carries the span for the runtime's own events.
func (rt *Runtime) startRun(base context.Context, r TracedRun) (context.Context, RunSpan) {
	if rt.opts.Tracer == nil {
		return base, nopRunSpan{}
	}
	ctx, span := rt.opts.Tracer.StartRun(base, r)
	return context.WithValue(ctx, runSpanKey{}, span), span
}

// runSpanOf returns the span ctx carries, or one that records nothing.
func runSpanOf(ctx context.Context) RunSpan {
	if s, ok := ctx.Value(runSpanKey{}).(RunSpan); ok {
		return s
	}
	return nopRunSpan{}
}
