package worker

import (
	"time"

	"github.com/taskwire/taskwire/backend"
)

// Metrics receives the runtime's counters. Every label is bounded: kind is a
// kind registered on the Runtime or "unknown", and the other labels are the
// constants below. Task IDs, arguments and error texts never appear.
// Implementations must be safe for concurrent use and must not block: they
// are called on the runtime's goroutines.
type Metrics interface {
	// JobTransition counts one transition of a job of the given kind:
	// TransitionClaimed when a job is claimed, then exactly one of
	// TransitionCompleted, TransitionFailed, TransitionCancelled,
	// TransitionRetried, TransitionInputRequested, TransitionReleased or
	// TransitionLeaseLost for that claim (none when a final write failed
	// for another reason, which is logged).
	JobTransition(kind string, t Transition)
	// JobFailure counts one handler run that failed, by category, whether
	// it is retried or not.
	JobFailure(kind string, c FailureCategory)
	// HandlerDuration observes the wall time of one handler run.
	HandlerDuration(kind string, d time.Duration)
	// Maintenance counts n jobs, tasks or rows handled by a maintenance
	// pass: TransitionRescued, TransitionExpiredDeleted,
	// TransitionOutboxPruned or TransitionJobPruned. Only passes that
	// handled something are reported.
	Maintenance(t Transition, n int)
}

// Transition labels a job transition.
type Transition string

// Transitions, as reported to Metrics.
const (
	// TransitionClaimed: a claim handed the job to this worker.
	TransitionClaimed Transition = "claimed"
	// TransitionCompleted: the task completed (also with isError results).
	TransitionCompleted Transition = "completed"
	// TransitionFailed: the task failed.
	TransitionFailed Transition = "failed"
	// TransitionCancelled: the task was cancelled at the client's request.
	TransitionCancelled Transition = "cancelled"
	// TransitionRetried: the job was given back to run again after a
	// backoff, counting one failure.
	TransitionRetried Transition = "retried"
	// TransitionInputRequested: the task became input_required and the job
	// was parked.
	TransitionInputRequested Transition = "input_requested"
	// TransitionLeaseLost: the lease ended before the run's final write; the
	// run wrote nothing.
	TransitionLeaseLost Transition = "lease_lost"
	// TransitionReleased: the job was given back without counting a failure
	// (shutdown, or a kind this runtime cannot run).
	TransitionReleased Transition = "released"
	// TransitionRescued: jobs whose lease expired were made available again
	// (or failed) by Store.RescueExpired.
	TransitionRescued Transition = "rescued"
	// TransitionExpiredDeleted: tasks past their TTL were deleted by
	// Store.DeleteExpired.
	TransitionExpiredDeleted Transition = "expired_deleted"
)

// FailureCategory labels why a handler run failed: the runtime reports it
// to Metrics, writes it to the log, and passes it to the store with the
// run's Retry or Fail, whose history records it for operators (package
// console). It is backend.FailureCategory; the runtime reports the
// constants below, never backend.FailureUnknown.
type FailureCategory = backend.FailureCategory

// Failure categories, as reported to Metrics.
const (
	// FailureHandlerError: the handler returned an ordinary error; the job
	// is retried while attempts remain.
	FailureHandlerError = backend.FailureHandlerError
	// FailurePermanent: the handler returned Permanent(err) or an
	// *mcp.Error; the task fails without a retry.
	FailurePermanent = backend.FailurePermanent
	// FailureTimeout: the handler returned an error wrapping
	// context.DeadlineExceeded; retried like FailureHandlerError.
	FailureTimeout = backend.FailureTimeout
	// FailureInvalidResult: the result, or the set of input requests, did
	// not satisfy the task's origin; the task fails without a retry.
	FailureInvalidResult = backend.FailureInvalidResult
	// FailurePanic: the handler panicked; retried like
	// FailureHandlerError.
	FailurePanic = backend.FailurePanic
	// FailureUnavailable: the handler returned Unavailable(err), a
	// dependency it needs was down; retried until both MaxAttempts and
	// Options.RetryWindow are used up.
	FailureUnavailable = backend.FailureUnavailable
)

// unknownKind is the kind label of jobs whose kind is not registered.
const unknownKind = "unknown"

// nopMetrics discards everything.
type nopMetrics struct{}

func (nopMetrics) JobTransition(string, Transition)      {}
func (nopMetrics) JobFailure(string, FailureCategory)    {}
func (nopMetrics) HandlerDuration(string, time.Duration) {}
func (nopMetrics) Maintenance(Transition, int)           {}
