package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
)

// RawHandler runs one job and returns the complete tool result. The runtime
// validates the result against the task's origin (output schema, size and
// depth limits; see task.Validator.Result) before it completes the task. The
// returned error decides what happens otherwise; see AddHandler for the rules.
type RawHandler func(ctx context.Context, job *Job) (*mcp.CallToolResult, error)

// AddRawHandler registers h for jobs of kind (a tool name), configured by
// opts (WithRunTimeout). It fails when kind is empty, h is nil, kind
// already has a handler or an option is invalid.
//
// A handler may also be registered while Run runs: the claims that start
// afterwards take the kind's jobs too (one atomic load per claim reads the
// kinds). Its queue (WithQueue) must then be one the runtime serves: with
// Options.Queues nil, a queue that no handler named when Run started is
// refused, since the queues are fixed once Run has started.
func (rt *Runtime) AddRawHandler(kind string, h RawHandler, opts ...HandlerOption) error {
	if h == nil {
		return errors.New("worker: nil handler")
	}
	return rt.register(kind, h, opts)
}

// AddHandler registers a typed handler for jobs of kind (a tool name),
// configured by opts (WithRunTimeout). It fails like Runtime.AddRawHandler,
// and may be called while Run runs as that may.
//
// The job's arguments are decoded into In with encoding/json; arguments that
// do not decode complete the task with an isError result "Invalid
// arguments: ...", as the server does for inline calls. The Out value is
// encoded as the result's structuredContent, mirrored as one text content
// block, and validated against the task's origin before the task completes.
//
// The handler's error decides the outcome of the run:
//
//   - nil: the task completes with the result; a result the origin rejects
//     (or an Out that cannot be encoded) fails the task with the client-safe
//     {-32603, "The task produced an invalid result."} and is never retried.
//   - ToolError(msg): the task completes with an isError text result that
//     the model sees.
//   - ErrInputPending (from Job.Ask): the job is parked until the
//     client answers; see Job.Ask.
//   - an *mcp.Error (found with errors.As): the task fails with it, as is,
//     without a retry. It must be client-safe.
//   - Permanent(err): the task fails with {-32603, "The task failed."}
//     without a retry.
//   - Unavailable(err): retried after Options.Backoff until the job has
//     used its MaxAttempts and its first failure was Options.RetryWindow
//     or more ago; then the task fails as below.
//   - any other error, and a recovered panic: the job is retried after
//     Options.Backoff, until the job has used its MaxAttempts; then the
//     task fails with {-32603, "The task failed after repeated attempts."}.
//
// Whatever the handler returns, a cancellation the runtime delivered first
// takes precedence over an error: if the handler's context was cancelled with
// cause ErrCancelRequested, an error (of any kind) cancels the task, and if it
// was cancelled with cause ErrShuttingDown, an error releases the job to run
// again. A result returned without an error always completes the task: a
// completion that wins the race with a cancellation stands. If the context
// was cancelled with cause backend.ErrLeaseLost, nothing is written at all.
func AddHandler[In, Out any](rt *Runtime, kind string, h func(ctx context.Context, job *Job, in In) (Out, error),
	opts ...HandlerOption) error {
	if h == nil {
		return errors.New("worker: nil handler")
	}
	return rt.register(kind, func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
		var in In
		if err := json.Unmarshal(job.Arguments(), &in); err != nil {
			return textResult("Invalid arguments: "+err.Error(), true), nil
		}
		out, err := h(ctx, job, in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, errUnencodableOutput
		}
		return mcp.StructuredResult(b), nil
	}, opts)
}

// register adds h for kind.
func (rt *Runtime) register(kind string, h RawHandler, opts []HandlerOption) error {
	if kind == "" {
		return errors.New("worker: a handler needs a kind")
	}
	if !utf8.ValidString(kind) || strings.ContainsFunc(kind, unicode.IsControl) {
		// The kind is the label of the metrics, which refuse (panic on)
		// a label that is not UTF-8, and no tool has such a name.
		return errors.New("worker: a handler's kind must be UTF-8 without control characters")
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, dup := rt.handlers[kind]; dup {
		return fmt.Errorf("worker: kind %q already has a handler", kind)
	}
	hd, err := newHandler(h, opts)
	if err != nil {
		return fmt.Errorf("%w (kind %q)", err, kind)
	}
	if rt.started {
		return rt.registerLive(kind, hd)
	}
	rt.handlers[kind] = hd
	return nil
}

// registerLive adds hd for kind once Run has started, rt.mu held: the
// handlers map is replaced (jobs read it without locking) and so are the
// kinds the handler's queue claims, from the next claim on. It fails when
// the runtime serves every queue its handlers named at start
// (Options.Queues nil) and hd names another; a queue Options.Queues left
// out is not claimed from, as before Run.
func (rt *Runtime) registerLive(kind string, hd handler) error {
	i := slices.IndexFunc(rt.queues, func(q *queueState) bool { return q.name == hd.queue })
	if i < 0 && rt.opts.Queues == nil {
		return fmt.Errorf("worker: kind %q: Run has started, and its queue %q is not one the runtime serves", kind, hd.queue)
	}
	next := maps.Clone(rt.handlers)
	next[kind] = hd
	rt.handlers = next
	rt.table.Store(&next)
	if i >= 0 {
		q := rt.queues[i]
		kinds := append(slices.Clone(*q.kinds.Load()), kind)
		slices.Sort(kinds)
		q.kinds.Store(&kinds)
		rt.hinted.Store(true) // jobs of the kind may be waiting
		rt.signalWake()
	}
	return nil
}

// Causes of the cancellation of a handler's context, for context.Cause.
var (
	// ErrCancelRequested: the client asked to cancel the task. A handler
	// that returns an error afterwards cancels the task.
	ErrCancelRequested = errors.New("worker: cancellation requested")
	// ErrShuttingDown: Run is draining and ShutdownGrace has elapsed. A
	// handler that returns an error afterwards releases its job, which
	// runs again elsewhere from the start.
	ErrShuttingDown = errors.New("worker: shutting down")
)

// (backend.ErrLeaseLost, declared with the store contract, is the third
// cause: the lease could not be extended, so the runtime will write nothing
// for this run.)

// ToolError returns an error that completes the task with an isError result
// whose only content is the text msg: a tool-level failure the model reads
// and may react to, not a protocol error. msg is sent to the client: it must
// not carry secrets.
func ToolError(msg string) error { return &toolError{msg: msg} }

type toolError struct{ msg string }

func (e *toolError) Error() string { return "worker: tool error: " + e.msg }

// Permanent marks err as not worth retrying: the task fails at once with
// {-32603, "The task failed."}. err's text is never sent to the client.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return "worker: permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Unavailable marks err as an infrastructure fault: a database, a service
// or the network the handler needs is down, and the same job will likely
// succeed once it is back. The job is retried with Options.Backoff like
// any failure, but the task fails (with {-32603, "The task failed after
// repeated attempts."}) only when it has used its MaxAttempts and its
// first failure was Options.RetryWindow or more ago. err's text is never
// sent to the client. Unavailable(nil) is nil.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{err: err}
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return "worker: unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// Internal outcome markers.
var (
	errUnencodableOutput   = errors.New("worker: handler output cannot be encoded")
	errInvalidInputRequest = errors.New("worker: invalid input request")
	errPanicked            = errors.New("worker: handler panicked")
	errInvalidResult       = errors.New("worker: the result does not fit the task's origin")
	errNoPendingAsk        = errors.New("worker: handler returned ErrInputPending without an unanswered Ask")
)

// Client-facing texts.
const (
	msgTaskFailed    = "The task failed."
	msgInvalidResult = "The task produced an invalid result."
	msgCancelled     = "Cancelled at the client's request."
	msgRetrying      = "Retrying after a failed attempt."
	msgWaitingInput  = "Waiting for input."
)

func internalError(msg string) *mcp.Error { return mcp.NewError(mcp.CodeInternalError, msg) }

func textResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// outcome is what one handler call returned.
type outcome struct {
	res      *mcp.CallToolResult
	err      error
	panicked bool
	// timeout is the context cause of a run that outlived its run
	// timeout (ErrRunTimeout), nil otherwise.
	timeout error
}

// runJob runs one claimed job to its final write and frees its slot: once
// its completion is queued for a batch (the slot bounds running handlers;
// the batcher's queue bounds the completions waiting), or when it returns.
func (rt *Runtime) runJob(base context.Context, q *queueState, j backend.JobRow, claimedAt time.Time) {
	freed := false
	freeSlot := func() {
		if !freed {
			freed = true
			<-q.slots
			<-rt.slots
			if rt.queueMetrics != nil {
				rt.queueMetrics.QueueRunning(q.name, -1)
			}
			q.freed.Store(true)
			rt.signalWake()
		}
	}
	defer freeSlot()
	kind := rt.kindLabel(j.Kind)
	rt.metrics.JobTransition(kind, TransitionClaimed)
	base, span := rt.startRun(base, TracedRun{Kind: kind, TaskID: j.TaskID, Attempt: j.Attempt, Failures: j.Failures,
		InterruptedRuns: j.InterruptedRuns, Creator: j.Trace})
	defer span.End()
	expires := claimedAt.Add(rt.opts.Lease)
	h, ok := rt.handler(j.Kind)
	if !ok {
		rt.log.Error("worker: the store returned a job of an unregistered kind; releasing it")
		rt.release(base, j, kind, expires)
		return
	}
	if j.CancelRequested {
		rt.cancel(base, j, kind, expires)
		return
	}

	jctx, cancel := context.WithCancelCause(base) // Runtime.stopJobs cancels it
	defer cancel(nil)
	k := rt.keepLease(base, jctx, cancel, j, kind, expires)
	untrack := rt.track(j.TaskID, k)
	defer untrack()

	jc := newJob(j, rt.validator)
	jc.run = jobRun{rt: rt, base: base, jctx: jctx, cancel: cancel, kind: kind}
	rt.startProgress(jc, k, claimedAt)
	if rt.checkpoints != nil {
		k.attachJob(jc)
	}
	start := time.Now()
	o := rt.callHandler(jctx, h, jc, kind)
	rt.metrics.HandlerDuration(kind, time.Since(start))
	var last *progressReport
	if jc.reports {
		last = jc.progress.finish()
	}
	expires = k.stop()
	if errors.Is(context.Cause(jctx), backend.ErrLeaseLost) {
		span.LeaseLost()
	}
	rt.settle(base, j, jc, kind, expires, o, context.Cause(jctx), last, freeSlot)
}

// call runs the handler, recovering a panic.
func (rt *Runtime) call(ctx context.Context, h RawHandler, jc *Job, kind string) (o outcome) {
	defer func() {
		if v := recover(); v != nil {
			// The panic value may carry arguments: log the stack only.
			rt.log.Error("worker: handler panicked", "kind", kind, "attempt", jc.Attempt(), "stack", string(debug.Stack()))
			o = outcome{err: errPanicked, panicked: true}
		}
	}()
	res, err := h(ctx, jc)
	return outcome{res: res, err: err}
}

func (rt *Runtime) loseLease(cancel context.CancelCauseFunc, kind string, attempt int64) {
	cancel(backend.ErrLeaseLost)
	rt.metrics.JobTransition(kind, TransitionLeaseLost)
	rt.log.Warn("worker: lease lost; the handler is cancelled and its outcome dropped", "kind", kind, "attempt", attempt)
}

// checkCancel cancels the handler with ErrCancelRequested when the client
// asked for it; a handler already cancelled is left alone.
func (rt *Runtime) checkCancel(base, jctx context.Context, cancel context.CancelCauseFunc, taskID, kind string) {
	if jctx.Err() == nil && rt.cancelRequested(base, taskID, kind) {
		cancel(ErrCancelRequested)
	}
}

// cancelRequested reads the task's cancel intent; a failed read is logged
// and counts as no intent.
func (rt *Runtime) cancelRequested(base context.Context, taskID, kind string) bool {
	ctx, done := context.WithTimeout(base, rt.opts.Lease)
	defer done()
	yes, err := rt.opts.Store.CancelRequested(ctx, taskID)
	if err != nil {
		rt.log.Warn("worker: reading the cancel intent failed", "kind", kind, "err", errText(err))
		return false
	}
	return yes
}

// settle makes the one fenced write that ends a run. A completion calls
// queued once it is queued for a batch.
//
// A progress report still pending (last) is written right before the final
// write; a batched completion carries its numbers instead.
func (rt *Runtime) settle(base context.Context, j backend.JobRow, jc *Job, kind string, expires time.Time, o outcome,
	cause error, last *progressReport, queued func()) {
	if errors.Is(cause, backend.ErrLeaseLost) {
		return // counted and logged when it was found; nothing may be written
	}
	if last != nil && (o.err != nil || rt.completer == nil) {
		rt.flushProgress(base, j, kind, last)
		last = nil
	}
	if o.err != nil || rt.completer == nil {
		jc.flushLater() // the final write cannot carry it
	}
	switch {
	case o.err == nil:
		rt.complete(base, j, jc, kind, expires, o.res, last, queued)
		return
	case errors.Is(cause, ErrShuttingDown):
		rt.release(base, j, kind, expires)
		return
	case errors.Is(cause, ErrCancelRequested):
		rt.cancel(base, j, kind, expires)
		return
	}
	var (
		te *toolError
		me *mcp.Error
		pe *permanentError
		ue *unavailableError
	)
	switch err := o.err; {
	case o.panicked:
		rt.retryOrFail(base, j, kind, expires, FailurePanic, err)
	case o.timeout != nil && !errors.Is(err, ErrInputPending):
		rt.retryOrFail(base, j, kind, expires, FailureTimeout, fmt.Errorf("%w; the handler returned: %w", o.timeout, err))
	case errors.As(err, &te):
		rt.complete(base, j, jc, kind, expires, textResult(te.msg, true), nil, queued)
	case errors.Is(err, ErrInputPending):
		rt.requestInput(base, j, jc, kind, expires)
	case errors.Is(err, errUnencodableOutput):
		rt.failNow(base, j, kind, expires, FailureInvalidResult, internalError(msgInvalidResult), err)
	case errors.Is(err, errInvalidInputRequest):
		rt.failNow(base, j, kind, expires, FailureInvalidResult, internalError(msgTaskFailed), err)
	case errors.As(err, &me):
		c := *me
		rt.failNow(base, j, kind, expires, FailurePermanent, &c, err)
	case errors.As(err, &pe):
		rt.failNow(base, j, kind, expires, FailurePermanent, internalError(msgTaskFailed), err)
	case errors.As(err, &ue):
		rt.retryOrFail(base, j, kind, expires, FailureUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		rt.retryOrFail(base, j, kind, expires, FailureTimeout, err)
	default:
		rt.retryOrFail(base, j, kind, expires, FailureHandlerError, err)
	}
}

// complete validates res against the origin and completes the task, or
// fails it when the result is invalid. With a batcher, queued is called
// once the completion is queued, and the completion carries the value
// jc's CheckpointLater holds (without a batcher, settle wrote it).
func (rt *Runtime) complete(base context.Context, j backend.JobRow, jc *Job, kind string, expires time.Time,
	res *mcp.CallToolResult, last *progressReport, queued func()) {
	valid, encoded, err := rt.validator.EncodeResult(j.Origin, res)
	if err != nil {
		jc.flushLater()
		rt.failNow(base, j, kind, expires, FailureInvalidResult, internalError(msgInvalidResult), errInvalidResult)
		return
	}
	ckpt := jc.takeLater() // each try of the write carries it
	rt.finish(base, kind, j.AttemptNumber(), TransitionCompleted, rt.write(base, expires, func(ctx context.Context) error {
		if rt.completer != nil {
			c := backend.Completion{Lease: j.Lease, Result: valid, ResultJSON: encoded, Checkpoint: ckpt}
			if last != nil {
				c.Progress = last.count() // points into the Job: no copy
			}
			return rt.completer.complete(ctx, c, queued)
		}
		return rt.opts.Store.Complete(ctx, j.Lease, valid, "")
	}))
}

// failNow counts a failure of category c, caused by err, and fails the task
// with rpcErr; the store records c, never err's text, in the task's
// history.
func (rt *Runtime) failNow(base context.Context, j backend.JobRow, kind string, expires time.Time, c FailureCategory, rpcErr *mcp.Error,
	err error) {
	rt.metrics.JobFailure(kind, c)
	runSpanOf(base).Failed(c)
	rt.log.Warn("worker: handler failed permanently", "kind", kind, "attempt", j.AttemptNumber(), "category", string(c),
		"err", jobErrText(&j, err))
	rt.fail(base, j, kind, expires, c, rpcErr)
}

// fail fails the task with rpcErr, recording the failure's category c in
// its history.
func (rt *Runtime) fail(base context.Context, j backend.JobRow, kind string, expires time.Time, c FailureCategory,
	rpcErr *mcp.Error) {
	rt.finish(base, kind, j.AttemptNumber(), TransitionFailed, rt.write(base, expires, func(ctx context.Context) error {
		return rt.opts.Store.Fail(ctx, j.Lease, rpcErr, "", c)
	}))
}

// retryOrFail counts a failure of category c, caused by err, and retries the
// job after the backoff, or fails the task once its attempts are used up
// (see exhausted); the store records c, never err's text, in the task's
// history. A task whose client asked to cancel is cancelled instead of
// retried.
func (rt *Runtime) retryOrFail(base context.Context, j backend.JobRow, kind string, expires time.Time, c FailureCategory, err error) {
	rt.metrics.JobFailure(kind, c)
	runSpanOf(base).Failed(c)
	failures := j.Failures + 1
	if rt.exhausted(j, failures, c) {
		rt.log.Warn("worker: handler failed; no attempts left", "kind", kind, "attempt", j.AttemptNumber(),
			"failures", failures, "category", string(c), "err", jobErrText(&j, err))
		rt.fail(base, j, kind, expires, c, backend.ExhaustedError())
		return
	}
	if rt.cancelRequested(base, j.TaskID, kind) {
		rt.cancel(base, j, kind, expires)
		return
	}
	delay := max(rt.opts.Backoff(failures), 0)
	rt.log.Warn("worker: handler failed; retrying", "kind", kind, "attempt", j.AttemptNumber(), "failures", failures,
		"category", string(c), "delay", delay, "err", jobErrText(&j, err))
	runAt := rt.now().Add(delay)
	rt.finish(base, kind, j.AttemptNumber(), TransitionRetried, rt.write(base, expires, func(ctx context.Context) error {
		return rt.opts.Store.Retry(ctx, j.Lease, runAt, msgRetrying, c)
	}))
}

// exhausted reports whether the failures-th failure of j, of category c,
// ends its retries: at MaxAttempts, and for FailureUnavailable only once
// the first failure is also Options.RetryWindow old (the failure at hand
// is the first when j has none recorded).
func (rt *Runtime) exhausted(j backend.JobRow, failures int, c FailureCategory) bool {
	if failures < j.MaxAttempts {
		return false
	}
	if c != FailureUnavailable {
		return true
	}
	first := j.FirstFailure
	if first.IsZero() {
		first = rt.now()
	}
	return rt.now().Sub(first) >= rt.opts.RetryWindow
}

// requestInput parks the job on the run's unanswered input requests.
func (rt *Runtime) requestInput(base context.Context, j backend.JobRow, jc *Job, kind string, expires time.Time) {
	reqs := jc.pendingRequests()
	if len(reqs) == 0 {
		rt.failNow(base, j, kind, expires, FailureInvalidResult, internalError(msgTaskFailed), errNoPendingAsk)
		return
	}
	if rt.cancelRequested(base, j.TaskID, kind) {
		rt.cancel(base, j, kind, expires)
		return
	}
	err := rt.write(base, expires, func(ctx context.Context) error {
		return rt.opts.Store.RequestInput(ctx, j.Lease, reqs, msgWaitingInput)
	})
	if errors.Is(err, backend.ErrKeyReused) {
		rt.failNow(base, j, kind, expires, FailureInvalidResult, internalError(msgTaskFailed), err)
		return
	}
	rt.finish(base, kind, j.AttemptNumber(), TransitionInputRequested, err)
}

func (rt *Runtime) cancel(base context.Context, j backend.JobRow, kind string, expires time.Time) {
	rt.finish(base, kind, j.AttemptNumber(), TransitionCancelled, rt.write(base, expires, func(ctx context.Context) error {
		return rt.opts.Store.Cancel(ctx, j.Lease, msgCancelled)
	}))
}

func (rt *Runtime) release(base context.Context, j backend.JobRow, kind string, expires time.Time) {
	rt.finish(base, kind, j.AttemptNumber(), TransitionReleased, rt.write(base, expires, func(ctx context.Context) error {
		return rt.opts.Store.Release(ctx, j.Lease)
	}))
}

// finish reports the result of a final write.
func (rt *Runtime) finish(base context.Context, kind string, attempt int64, t Transition, err error) {
	runSpanOf(base).Wrote(t, err)
	switch {
	case err == nil:
		rt.metrics.JobTransition(kind, t)
	case errors.Is(err, backend.ErrLeaseLost):
		rt.metrics.JobTransition(kind, TransitionLeaseLost)
		rt.log.Warn("worker: lease lost before the final write", "kind", kind, "attempt", attempt, "transition", string(t))
	default:
		rt.log.Error("worker: final write failed; the lease will expire and the job be rescued",
			"kind", kind, "attempt", attempt, "transition", string(t), "err", errText(err))
	}
}
