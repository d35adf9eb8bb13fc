package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// MaxRunTimeout bounds WithRunTimeout: a week, longer than any task is
// kept by default, so that a larger value, most likely a unit mistake, is
// refused.
const MaxRunTimeout = 7 * 24 * time.Hour

// ErrRunTimeout is the cause (context.Cause) of the context of a handler
// run that outlived its kind's run timeout (WithRunTimeout); the cause's
// text names the timeout.
var ErrRunTimeout = errors.New("worker: run timeout")

// HandlerOption configures one handler (AddHandler, AddRawHandler).
type HandlerOption func(*handlerOptions)

type handlerOptions struct {
	runTimeout time.Duration
	queue      string
}

// WithRunTimeout bounds each run of the handler (each attempt, and each
// run that resumes after an input round) to d: once d has passed since the
// run started, its context ends with a cause wrapping ErrRunTimeout, and
// an error the handler returns then is a failure of category
// FailureTimeout, retried after Options.Backoff like any failure until the
// job's MaxAttempts are used, then failing the task with {-32603, "The
// task failed after repeated attempts."}. A result returned without an
// error still completes the task. The timeout ends only the handler's
// context: a handler that ignores its context runs on, and keeps its
// lease. Zero means no timeout; a negative d, or one above MaxRunTimeout,
// makes the registration fail.
func WithRunTimeout(d time.Duration) HandlerOption {
	return func(o *handlerOptions) { o.runTimeout = d }
}

// handler is a registered handler with its options.
type handler struct {
	run     RawHandler
	timeout time.Duration // 0: none
	cause   error         // the context cause of a run past its timeout
	queue   string        // the queue its jobs are claimed from
}

// newHandler applies opts to h.
func newHandler(h RawHandler, opts []HandlerOption) (handler, error) {
	var o handlerOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case o.runTimeout < 0:
		return handler{}, errors.New("worker: a run timeout must not be negative")
	case o.runTimeout > MaxRunTimeout:
		return handler{}, fmt.Errorf("worker: a run timeout must be at most %v, got %v", MaxRunTimeout, o.runTimeout)
	}
	if o.queue == "" {
		o.queue = backend.DefaultQueue
	} else if err := backend.CheckQueue(o.queue); err != nil {
		return handler{}, fmt.Errorf("worker: WithQueue: %w", err)
	}
	hd := handler{run: h, timeout: o.runTimeout, queue: o.queue}
	if hd.timeout > 0 {
		hd.cause = fmt.Errorf("%w of %v passed", ErrRunTimeout, hd.timeout)
	}
	return hd, nil
}

// call runs h under its timeout, if any. o.timeout is set when the run
// outlived it.
func (rt *Runtime) callHandler(jctx context.Context, h handler, jc *Job, kind string) outcome {
	if h.timeout == 0 {
		return rt.call(jctx, h.run, jc, kind)
	}
	ctx, stop := context.WithTimeoutCause(jctx, h.timeout, h.cause)
	defer stop()
	o := rt.call(ctx, h.run, jc, kind)
	if cause := context.Cause(ctx); errors.Is(cause, ErrRunTimeout) {
		o.timeout = cause
	}
	return o
}
