package backend

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// OperatorSource is an optional extension of Store for the people who run
// a deployment (package console): Operator returns the store's Operator,
// over the same database and valid until the store's Close.
// store/sqlite, store/postgres and store/memory implement it. The
// operator methods are kept off the Store itself, as the job writes are
// kept behind Jobs, so that an application's store handle shows only
// what the application uses: whoever calls Operator must put the value
// behind operator authentication.
type OperatorSource interface {
	Operator() Operator
}

// Operator is the operators' view of a store: it reads every tenant's
// tasks, bypassing the authorization binding that task.Manager enforces,
// and acts on them. It must only ever be reachable behind operator
// authentication. A store's OperatorSource.Operator returns it.
//
// Every method is bounded by the store's per-call timeout. Expired tasks
// are invisible, as they are to clients. Unknown task IDs fail with
// task.ErrNotFound; invalid queries with ErrBadOperatorQuery or
// task.ErrBadCursor, before the database is asked.
type Operator interface {
	// Tasks returns one page of the tasks matching q, newest first, ties
	// broken by descending ID. A page holds at most MaxOperatorPage
	// tasks.
	Tasks(ctx context.Context, q OperatorQuery) (OperatorPage, error)
	// Counts counts the tasks held by tool and status, expired ones
	// included until they are deleted (as Gauges.Tasks does). Tools and
	// statuses without a task are left out.
	Counts(ctx context.Context) ([]TaskCount, error)
	// Task returns one task with its job and its recorded history (at
	// most MaxTaskEvents events, the newest).
	Task(ctx context.Context, id string) (OperatorTask, error)
	// Activity counts the tasks that reached a terminal status at or
	// after since, per minute, expired tasks included until they are
	// deleted (buckets start on whole minutes of the store's clock,
	// oldest first; minutes without one are omitted). since is clamped
	// to at most MaxActivityWindow ago.
	Activity(ctx context.Context, since time.Time) ([]ActivityBucket, error)
	// Cancel records cancellation intent on the task, through the same
	// path as a client's tasks/cancel: a running job ends at its next
	// check, a queued one without running. It succeeds without change on
	// a terminal task.
	Cancel(ctx context.Context, id string) error
	// Retry runs a failed task again: it creates a new task with the
	// failed task's origin (tool and arguments), binding (endpoint,
	// tenant, principal), TTL and poll interval, and a fresh attempt
	// budget (DefaultMaxAttempts), and returns it. The failed task stays
	// failed (a terminal task never changes, and the client that created
	// it keeps seeing its outcome); its history records the retry. A task
	// that is not failed fails with ErrNotFailed.
	Retry(ctx context.Context, id string) (task.Task, error)
	// Delete deletes a finished (completed, failed or cancelled) task
	// with its job and history, before its TTL; an unfinished one fails
	// with ErrNotFinished.
	Delete(ctx context.Context, id string) error
}

// Bounds of the Operator methods.
const (
	// MaxOperatorPage bounds a page of Operator.Tasks; a larger Limit is
	// served as MaxOperatorPage, one below 1 as 1.
	MaxOperatorPage = 100
	// MaxTaskEvents bounds the history a store keeps of one task: older
	// events are dropped as new ones are recorded.
	MaxTaskEvents = 200
	// MaxActivityWindow bounds how far back Operator.Activity reads.
	MaxActivityWindow = time.Hour
	// MaxFilterText bounds the tool and tenant of an OperatorQuery.
	MaxFilterText = 256
)

// Errors of the Operator methods.
var (
	// ErrBadOperatorQuery: an OperatorQuery field is out of range: an
	// unknown status, filter text that is too long or not storable, or a
	// created-between range that ends before it starts.
	ErrBadOperatorQuery = errors.New("backend: invalid operator query")
	// ErrNotFailed: Operator.Retry of a task that did not fail.
	ErrNotFailed = errors.New("backend: the task has not failed")
	// ErrNotFinished: Operator.Delete of a task that has not finished.
	ErrNotFinished = errors.New("backend: the task has not finished")
)

// OperatorQuery selects tasks of every tenant. Zero fields match all.
type OperatorQuery struct {
	// Status keeps the tasks in this status.
	Status task.Status
	// Tool keeps the tasks of this tool (job kind).
	Tool string
	// Tenant keeps the tasks of this tenant.
	Tenant string
	// CreatedFrom keeps the tasks created at or after it.
	CreatedFrom time.Time
	// CreatedBefore keeps the tasks created before it.
	CreatedBefore time.Time
	// Cursor is the NextCursor of the previous page of the same query, or
	// "" for the first. A cursor issued for other filters, altered or made
	// up fails with task.ErrBadCursor.
	Cursor string
	// Limit bounds the page (see MaxOperatorPage).
	Limit int
}

// OperatorPage is one page of Operator.Tasks.
type OperatorPage struct {
	Tasks []TaskSummary
	// NextCursor continues the listing; "" on the last page.
	NextCursor string
}

// TaskSummary is what a listing shows of a task: never its origin or
// principal.
type TaskSummary struct {
	ID            string
	Tool          string
	Endpoint      string
	Tenant        string
	Status        task.Status
	StatusMessage string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// ExpiresAt is zero for a task that never expires.
	ExpiresAt time.Time
}

// OperatorTask is one task as an operator sees it.
type OperatorTask struct {
	TaskSummary
	// Arguments are the tool arguments as received. They may hold what
	// the caller considers secret: a console shows them only when
	// configured to.
	Arguments json.RawMessage
	// Result is set when the task completed, Error when it failed.
	Result *mcp.CallToolResult
	Error  *mcp.Error
	// Progress is the last progress count reported, or nil.
	Progress *task.Progress
	// CancelRequested reports that cancellation was asked for.
	CancelRequested bool
	// Job is the task's job, nil when it was pruned (backend.Pruner) or
	// the task has none.
	Job *JobInfo
	// Events are the task's recorded history, oldest first.
	Events []TaskEvent
}

// JobInfo is the state of a task's job.
type JobInfo struct {
	// State is "available", "running", "awaiting_input" or "done".
	State string
	// Attempt is the claim counter (the fencing token of the last claim);
	// AttemptNumber is the attempt people read.
	Attempt int64
	// Failures counts the handler failures, MaxAttempts bounds them.
	Failures    int
	MaxAttempts int
	// InterruptedRuns counts the runs whose lease expired.
	InterruptedRuns int
	// InputRounds counts the runs that ended asking for input
	// (JobStore.RequestInput).
	InputRounds int
	// RunAt is when the job is (or was) due.
	RunAt time.Time
	// Worker names the worker holding the lease, LeaseExpires when it
	// ends; both zero unless the job is running.
	Worker       string
	LeaseExpires time.Time
	// CheckpointBytes is the size of the job's last checkpoint (see
	// Checkpointer), 0 when it has none; CheckpointAt is when it was
	// saved.
	CheckpointBytes int
	CheckpointAt    time.Time
}

// AttemptNumber returns the attempt of the work, counted as
// JobRow.AttemptNumber counts it (an input round is not an attempt), that
// the job is running ("running"), ran last ("done"), or runs next
// ("available", "awaiting_input"): 1 for a job never claimed, the same
// attempt for a job waiting for input and for the run that resumes it,
// one more after a failure, an interrupted run or a release.
func (j *JobInfo) AttemptNumber() int64 {
	n := j.Attempt - int64(j.InputRounds)
	if j.State == "available" || j.State == "awaiting_input" {
		n++
	}
	return n
}

// TaskEventKind names what happened to a task. The set is closed.
type TaskEventKind string

// Task event kinds.
const (
	// EventCreated: the task was created (enqueued).
	EventCreated TaskEventKind = "created"
	// EventClaimed: a worker claimed the job; Attempt and Worker say which.
	EventClaimed TaskEventKind = "claimed"
	// EventReleased: a shutting-down worker gave the job back.
	EventReleased TaskEventKind = "released"
	// EventLeaseLost: the lease expired and the job was rescued (an
	// interrupted run).
	EventLeaseLost TaskEventKind = "lease_lost"
	// EventRetry: a handler run failed and the job will run again (or,
	// with its attempts used up, the task fails next); Category says why
	// and RunAt when, Message counts the failures ("failure 2 of 10").
	EventRetry TaskEventKind = "retry"
	// EventInputRequired: the task asked its client for input.
	EventInputRequired TaskEventKind = "input_required"
	// EventInputAnswered: the input was answered; the task works again.
	EventInputAnswered TaskEventKind = "input_answered"
	// EventProgress: a worker reported progress; Message is its text.
	EventProgress TaskEventKind = "progress"
	// EventCancelRequested: cancellation was asked for.
	EventCancelRequested TaskEventKind = "cancel_requested"
	// EventCompleted, EventFailed, EventCancelled: the terminal state. A
	// failed event carries the Category of the handler run that failed the
	// task, when the worker reported one.
	EventCompleted TaskEventKind = "completed"
	EventFailed    TaskEventKind = "failed"
	EventCancelled TaskEventKind = "cancelled"
	// EventRetried: an operator retried the failed task; Message is the
	// new task's ID.
	EventRetried TaskEventKind = "retried"
	// EventCheckpoint: a running job saved a checkpoint
	// (Checkpointer.SaveCheckpoints); Message is its size ("512 bytes"),
	// never its content, Attempt and Worker the claim that saved it.
	EventCheckpoint TaskEventKind = "checkpoint"
)

// CheckpointMessage is the Message of an EventCheckpoint step for a
// checkpoint of n bytes, the same in every store.
func CheckpointMessage(n int) string { return strconv.Itoa(n) + " bytes" }

// TaskEvent is one step of a task's history.
type TaskEvent struct {
	At   time.Time
	Kind TaskEventKind
	// Attempt is the job's attempt counter at the event (0: before any
	// claim).
	Attempt int64
	// Worker names the worker, for claims, releases and lost leases.
	Worker string
	// Message is the status message of the step, when it has one.
	Message string
	// Category is why the handler run failed, for retry and failed
	// events: one of the FailureCategory constants, or "" when none was
	// recorded (a task the store failed by itself, such as
	// RescueExpired's, a caller that passed none, or a step recorded
	// before the store kept categories). It is never an error's text.
	Category FailureCategory
	// RunAt is when the job runs again, for a retry event that left the
	// job queued; zero otherwise (and for retries recorded before the
	// store kept it).
	RunAt time.Time
}

// TaskCount is the number of tasks of one tool in one status.
type TaskCount struct {
	Tool   string
	Status task.Status
	N      int64
}

// ActivityBucket counts the tasks that ended in one minute.
type ActivityBucket struct {
	Start     time.Time
	Completed int64
	Failed    int64
	Cancelled int64
}
