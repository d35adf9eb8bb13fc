package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// ErrInputPending is returned by Job.Ask when the client has not
// answered yet. The handler must return it (or an error wrapping it): the
// runtime then records every unanswered request of the run with
// Store.RequestInput, the task becomes input_required, and the job is parked
// until all of them are answered. Parking is not a failure and does not count
// an attempt failure.
var ErrInputPending = errors.New("worker: input pending")

// Job describes one run of a claimed job to its handler and lets the
// handler ask the client for input. It is valid only during the handler call
// and is safe for concurrent use by the handler's goroutines.
type Job struct {
	job       backend.JobRow
	validator *task.Validator

	// run is what the job's progress writes need; see Runtime.runJob.
	run jobRun
	// reports is whether the store records progress; progress, set up by
	// Runtime.startProgress, coalesces the reports when it does.
	reports  bool
	progress progressCoalescer

	mu      sync.Mutex
	pending mcp.InputRequests
	// checkpoint is the last checkpoint: the claim's, then this run's.
	checkpoint []byte
	// later is the value CheckpointLater holds until it is written, nil
	// when none is.
	later []byte
	// saving serializes the run's checkpoint writes, so that an older
	// value is never written after a newer one.
	saving sync.Mutex
	// steps serializes Step's read, merge and write of the checkpoint.
	steps sync.Mutex
}

// jobRun is the runtime side of one run of a job.
type jobRun struct {
	rt     *Runtime
	base   context.Context // for store calls; outlives the handler
	jctx   context.Context // the handler's context
	cancel context.CancelCauseFunc
	kind   string
}

func newJob(j backend.JobRow, v *task.Validator) *Job {
	return &Job{job: j, validator: v, checkpoint: j.Checkpoint}
}

// loseLease cancels the handler with cause backend.ErrLeaseLost, unless the
// lease keeper found the loss first.
func (j *Job) loseLease() {
	if !errors.Is(context.Cause(j.run.jctx), backend.ErrLeaseLost) {
		j.run.rt.loseLease(j.run.cancel, j.run.kind, j.job.AttemptNumber())
	}
}

// ReportProgress reports the job's progress: a status message for the
// client (for example "row 400 of 1000"; it must not carry secrets) with
// current units of work done out of total (zero when the total is
// unknown). ReportStatus reports a message without numbers.
//
// Reports are written to the task asynchronously, under the job's lease
// (a run whose lease was lost writes nothing), at most once per
// Options.ProgressInterval: the first write comes an interval after the
// claim at the earliest, and a report made before the interval ends
// replaces the one waiting, so the last report is the one written. A
// report still waiting when the handler returns is written right before
// the job's final write (its numbers with the completion itself when the
// store completes in batches; the final status message then replaces its
// message). Each write changes the task's statusMessage, which tasks/get
// returns and notifications/tasks carry; the numbers reach 2025-era
// clients waiting inline as notifications/progress. A store that records
// no progress (see backend.ProgressReporter) drops reports.
//
// ReportProgress never blocks on the store. It fails with an error wrapping
// backend.ErrInvalidProgress, writing nothing, when message is longer than
// backend.MaxProgressMessage or not valid UTF-8 or holds a NUL byte, or when a
// number is negative, infinite or NaN. Write failures are logged, never
// returned; a write that found the lease lost cancels the handler's
// context with cause backend.ErrLeaseLost.
func (j *Job) ReportProgress(message string, current, total float64) error {
	return j.report(progressReport{message: message, progress: task.Progress{Current: current, Total: total}, counted: true})
}

// ReportStatus reports a status message without progress numbers; see
// ReportProgress, whose rules it follows.
func (j *Job) ReportStatus(message string) error {
	return j.report(progressReport{message: message})
}

func (j *Job) report(r progressReport) error {
	if err := checkProgress(r); err != nil {
		return err
	}
	if j.reports {
		j.progress.report(r)
	}
	return nil
}

// TaskID returns the ID of the job's task. Do not log it next to arguments
// or results.
func (j *Job) TaskID() string { return j.job.TaskID }

// Kind returns the job kind, which is the tool name.
func (j *Job) Kind() string { return j.job.Kind }

// Attempt returns the attempt this run belongs to
// (backend.JobRow.AttemptNumber): 1 on the first run, one more after each
// failed, interrupted or released run, and the same on a run that resumes
// the task after its input requests were answered, since an input round is
// not an attempt.
func (j *Job) Attempt() int64 { return j.job.AttemptNumber() }

// InputRounds returns how many earlier runs of the job ended asking for
// input (Ask, ErrInputPending).
func (j *Job) InputRounds() int { return j.job.InputRounds }

// Failures returns how many earlier runs of the handler failed (and were
// retried).
func (j *Job) Failures() int { return j.job.Failures }

// InterruptedRuns returns how many earlier runs ended without an outcome
// because their lease expired: a crash, a lost lease, a final write that
// never committed. A handler whose side effects are not idempotent can use
// it to look for the traces of such a run.
func (j *Job) InterruptedRuns() int { return j.job.InterruptedRuns }

// Arguments returns a copy of the tool arguments exactly as the client sent
// them (a JSON object). They may contain secrets: never log them.
func (j *Job) Arguments() json.RawMessage { return j.job.Origin.Params().Arguments }

// Ask returns the client's answer to the input request stored under key, or
// asks for it.
//
// If the task already holds a response for key (from an earlier run), Ask
// returns it: an mcp.ElicitResult, mcp.CreateMessageResult or
// mcp.ListRootsResult in JSON, by req's method. Otherwise Ask records req as
// pending for this run and returns ErrInputPending, which the handler must
// return. A handler may Ask several keys before returning (for example to
// ask for two answers at once); every pending key is requested together when
// the handler returns.
//
// Keys are chosen by the handler and must be unique for the task's lifetime:
// the same key must always carry the same request. Because a resumed task
// re-runs its handler from the start, with the answers now available, a
// handler must be deterministic up to its Ask calls, and every side effect it
// performs before an Ask must be idempotent.
//
// Ask fails with a permanent error (returning it fails the task with
// {-32603, "The task failed."}, without retries) when key is empty, req is nil, req is not a kind of
// input the tool declared or is malformed (see task.Validator.InputRequests),
// or key was already asked in this run with a different request. ctx is not
// used today; it is there for stores that could wait for answers in process.
func (j *Job) Ask(ctx context.Context, key string, req *mcp.InputRequest) (json.RawMessage, error) {
	_ = ctx
	if key == "" || req == nil {
		return nil, Permanent(fmt.Errorf("%w: Ask needs a key and a request", errInvalidInputRequest))
	}
	if answer, ok := j.job.Responses[key]; ok {
		return answer, nil
	}
	if err := j.validator.InputRequests(j.job.Origin, mcp.InputRequests{key: req}); err != nil {
		return nil, Permanent(fmt.Errorf("%w: %w", errInvalidInputRequest, err))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if prev, ok := j.pending[key]; ok {
		if prev.Method != req.Method || string(prev.Params) != string(req.Params) {
			return nil, Permanent(fmt.Errorf("%w: a key was asked twice with different requests", errInvalidInputRequest))
		}
		return nil, ErrInputPending
	}
	if j.pending == nil {
		j.pending = mcp.InputRequests{}
	}
	c := *req
	j.pending[key] = &c
	return nil, ErrInputPending
}

// pendingRequests returns the requests asked in this run without answers.
func (j *Job) pendingRequests() mcp.InputRequests {
	j.mu.Lock()
	defer j.mu.Unlock()
	return maps.Clone(j.pending)
}
