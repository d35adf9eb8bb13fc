package backend

import (
	"context"
	"errors"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// JobStore is the job side of a durable store: the interface the worker
// runtime drives (worker.Options.Store). A durable store (store/sqlite,
// store/postgres) returns it from Store.Jobs; it works over the same tables
// as the store's task.Manager: one task row and one job row per task.
//
// Fencing: every Claim bumps the job's attempt counter and hands it out in
// the Lease. Every later write for that claim names the Lease, and the store
// applies it only if the job's attempt still equals Lease.Attempt and the
// lease has not expired (the job is still "running" for that attempt).
// Otherwise it returns ErrLeaseLost and changes nothing, so a worker whose
// lease expired, and whose job was reclaimed, can never commit.
//
// Every state change a client can observe (status, input requests, result,
// error) is committed together with an outbox row, and the task ID is
// published on the store's task.EventPublisher after commit.
type JobStore interface {
	// Claim leases up to limit available jobs of the queue p.Queue whose
	// kind is in kinds (all kinds when kinds is empty) and whose run-at
	// time has come, until now+lease: the highest priority first
	// (EnqueueOptions.Priority) and, within a priority, the oldest run-at
	// time first, then the oldest creation, then the lowest task ID. A job keeps its run-at time when
	// it is rescued, released, or parked for input and answered, so such a
	// job keeps its place in the queue ahead of later work; only Retry (and
	// Enqueue's RunAt) set it. Jobs are claimed without blocking other
	// claimers (FOR UPDATE SKIP LOCKED, or one writer on SQLite). Each Job
	// reports the task's cancel intent as of the claim, so that the runtime
	// need not read it before starting the handler.
	Claim(ctx context.Context, p ClaimParams) ([]JobRow, error)

	// Heartbeat extends the lease to now+lease.
	Heartbeat(ctx context.Context, l Lease, lease time.Duration) error

	// RequestInput records outstanding input requests (keys unique for
	// the task's lifetime: ErrKeyReused), turns the task input_required,
	// counts an input round (JobRow.InputRounds), and parks the job until
	// every request is answered; then the job is available again with the
	// answers in Job.Responses. The lease ends. An input round is not a
	// failure: it uses up neither MaxAttempts nor an attempt number.
	RequestInput(ctx context.Context, l Lease, reqs mcp.InputRequests, message string) error

	// Complete ends the task completed with res (already validated
	// against the origin) and finishes the job.
	Complete(ctx context.Context, l Lease, res *mcp.CallToolResult, message string) error

	// Fail ends the task failed with a client-safe error and finishes the
	// job. c is why the run failed, recorded on the history's failed event
	// (see FailureCategory.Recorded); "" records none.
	Fail(ctx context.Context, l Lease, rpcErr *mcp.Error, message string, c FailureCategory) error

	// Cancel ends the task cancelled and finishes the job.
	Cancel(ctx context.Context, l Lease, message string) error

	// Retry releases the job to run again at runAt, counting one failed
	// attempt, and notes the time of the job's first failure
	// (JobRow.FirstFailure) if it has none; the task stays working.
	// message is the status message. The failure that reaches the job's
	// MaxAttempts fails the task instead, unless c is FailureUnavailable:
	// such a job is retried whatever its count, and the caller bounds it
	// (the worker runtime by Options.RetryWindow as well as MaxAttempts).
	// c is why the run failed: the history's retry event (and the failed
	// event, when the task fails) records it, together with runAt (see
	// FailureCategory.Recorded); "" records none.
	Retry(ctx context.Context, l Lease, runAt time.Time, message string, c FailureCategory) error

	// Release gives the job back without counting a failure or an
	// interrupted run, for a worker that is shutting down: the job is
	// available again at once, in its place in the queue.
	Release(ctx context.Context, l Lease) error

	// CancelRequested reports whether the client asked to cancel the task.
	// It is not fenced; it reads the current intent.
	CancelRequested(ctx context.Context, taskID string) (bool, error)

	// RescueExpired takes at most p.Limit running jobs whose lease expired
	// at or before p.Now and counts an interrupted run for each (a crash,
	// a lost lease, or a final write that never committed), not a handler
	// failure: MaxAttempts is not used up by interruptions. A job whose
	// interrupted runs reach p.MaxInterruptedRuns fails its task with the
	// client-safe error {-32603, "The task failed after repeated
	// attempts."} (poison-pill protection: a job that kills its process
	// every time ends); the others become available again keeping their
	// run-at time, and their next claim gets a new attempt, and their
	// task's status message becomes InterruptedMessage (committed with an
	// outbox row and published, like every observable change). It returns
	// how many jobs it handled.
	RescueExpired(ctx context.Context, p RescueParams) (int, error)

	// DeleteExpired deletes at most limit tasks (with their jobs) whose
	// TTL has passed, and returns how many.
	DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error)
}

// FailureCategory names why a handler run failed, for the task's history
// (TaskEvent.Category) and the worker runtime's logs and metrics
// (worker.FailureCategory is this type). The set is closed and never
// carries an error's text, which may hold what a tool's caller considers
// secret: an operator reads the category, the log holds the text.
type FailureCategory string

// Failure categories.
const (
	// FailureHandlerError: the handler returned an ordinary error; the job
	// is retried while attempts remain.
	FailureHandlerError FailureCategory = "handler_error"
	// FailurePermanent: the handler returned worker.Permanent(err) or an
	// *mcp.Error; the task fails without a retry.
	FailurePermanent FailureCategory = "permanent"
	// FailureTimeout: the handler returned an error wrapping
	// context.DeadlineExceeded; retried like FailureHandlerError.
	FailureTimeout FailureCategory = "timeout"
	// FailureInvalidResult: the result, or the set of input requests, did
	// not satisfy the task's origin; the task fails without a retry.
	FailureInvalidResult FailureCategory = "invalid_result"
	// FailurePanic: the handler panicked; retried like
	// FailureHandlerError.
	FailurePanic FailureCategory = "panic"
	// FailureUnavailable: the handler returned worker.Unavailable(err): a
	// dependency (a database, a service, the network) was unavailable, an
	// infrastructure fault rather than an error of the job. Retried with
	// backoff; the task fails only once its MaxAttempts are used and the
	// failures have lasted the worker's retry window.
	FailureUnavailable FailureCategory = "unavailable"
	// FailureUnknown is what a store records for a category outside this
	// set; the worker runtime never reports it.
	FailureUnknown FailureCategory = "unknown"
)

// Recorded returns what a store records for c: c itself when it is one of
// the FailureCategory constants, "" (none) for "", and FailureUnknown for
// any other value, so that the history holds bounded values only.
func (c FailureCategory) Recorded() FailureCategory {
	switch c {
	case "", FailureHandlerError, FailurePermanent, FailureTimeout, FailureInvalidResult, FailurePanic, FailureUnavailable,
		FailureUnknown:
		return c
	}
	return FailureUnknown
}

// ClaimParams describe one claim.
type ClaimParams struct {
	// Worker names the claiming process, for diagnostics.
	Worker string
	// Kinds limits the claim to these job kinds (tool names).
	Kinds []string
	// Queue is the queue the claim takes jobs from (see CheckQueue); ""
	// means DefaultQueue. A claim takes the jobs of one queue only, so
	// that it walks one range of the claim index: a worker serving
	// several queues claims from each, or from several at once through a
	// QueuesClaimer.
	Queue string
	// Limit bounds the jobs claimed. At least 1.
	Limit int
	// Lease is how long the claim lasts without a heartbeat.
	Lease time.Duration
	// Now is the claim time.
	Now time.Time
	// Instance, when set, is the ID of the claiming process instance
	// (InstanceHold.ID): a store that is a LivenessRescuer records it with
	// each job claimed, so that the jobs of a dead instance can be taken
	// before their leases expire. Empty records none: those jobs wait for
	// their leases.
	Instance string
}

// ExhaustedError returns the error a task fails with when its job used all
// its attempts (the runtime, after the last failed one) or its interrupted
// runs (RescueExpired): {-32603, "The task failed after repeated
// attempts."}. It is client-safe: it reveals no cause. Each call returns a
// new value.
func ExhaustedError() *mcp.Error {
	return mcp.NewError(mcp.CodeInternalError, "The task failed after repeated attempts.")
}

// InterruptedMessage is the status message a rescue gives a task whose run
// was interrupted and which will run again (RescueExpired,
// InstanceHold.RescueDead): until the next run reports, tasks/get says
// that the run died instead of repeating the dead run's last message.
const InterruptedMessage = "The run was interrupted; it will resume."

// RescueParams describe one RescueExpired pass.
type RescueParams struct {
	// Now is the rescue time: leases that expired at or before it are
	// rescued.
	Now time.Time
	// Limit bounds the jobs handled. A limit below 1 handles none.
	Limit int
	// MaxInterruptedRuns bounds the interrupted runs of a job: the rescue
	// that counts the MaxInterruptedRuns-th fails its task. Values below 1
	// count as 1.
	MaxInterruptedRuns int
}

// Lease identifies one claim of a job: the fencing token of every write.
type Lease struct {
	// TaskID is the task whose job was claimed.
	TaskID string
	// Attempt is the job's attempt counter at this claim.
	Attempt int64
}

// JobRow is a claimed job.
type JobRow struct {
	Lease
	// Kind is the job kind: the tool name.
	Kind string
	// Origin is the task's origin; Origin.Params().Arguments are the tool
	// arguments exactly as received.
	Origin task.Origin
	// Failures counts the earlier runs whose handler failed (Retry).
	Failures int
	// MaxAttempts bounds the handler failures of the job: the failure that
	// reaches it fails the task.
	MaxAttempts int
	// InterruptedRuns counts the earlier runs that ended without an
	// outcome, their lease expired (RescueExpired).
	InterruptedRuns int
	// FirstFailure is when the job's first failed run was retried
	// (Retry), zero if none was: with MaxAttempts it bounds the retries of
	// FailureUnavailable faults.
	FirstFailure time.Time
	// InputRounds counts the earlier runs that ended in RequestInput. The
	// claim that resumes a task after its input was answered gets a new
	// Lease.Attempt, as every claim does, but continues the same attempt
	// of the work: see AttemptNumber.
	InputRounds int
	// Responses are every input response accepted so far, by key, kept
	// for the task's lifetime so a resumed handler sees earlier answers.
	Responses mcp.InputResponses
	// LeaseExpires is when the claim ends without a heartbeat.
	LeaseExpires time.Time
	// CancelRequested reports that the client had asked to cancel the
	// task when it was claimed; the runtime then cancels it without
	// running the handler. Later requests reach a running job through
	// CancelRequested.
	CancelRequested bool
	// Trace is the trace context the task was created with
	// (task.CreationContext.Trace), zero when none was stored: the worker
	// runtime links each run's span to it.
	Trace task.TraceContext
	// Checkpoint is the last checkpoint an earlier run (or an earlier
	// claim of the same attempt) saved with Checkpointer.SaveCheckpoints,
	// nil when none was: the claim carries it, so that a re-run needs no
	// query of its own to resume. Stores that are no Checkpointer leave it
	// nil.
	Checkpoint []byte
	// Progress is the task's progress count as of the claim, nil when it
	// has none: the worker runtime keeps a re-run's reports from lowering
	// it (see worker.Job.ReportProgress).
	Progress *task.Progress
}

// AttemptNumber returns the attempt of the work this claim runs, for
// people (logs, the console): 1 on the first claim, one more on each claim
// after a failure (Retry), an interrupted run or a Release, and the same on
// a claim that resumes after an input round. It is Lease.Attempt, which
// counts every claim and fences the writes, less InputRounds.
func (r *JobRow) AttemptNumber() int64 { return r.Attempt - int64(r.InputRounds) }

// Errors a store returns.
var (
	// ErrLeaseLost: the write's lease is no longer the job's current claim.
	ErrLeaseLost = errors.New("backend: lease lost")
	// ErrKeyReused: an input request key was used before in the task.
	ErrKeyReused = errors.New("backend: input request key reused")
)

// Enqueuer creates a task and its job in one transaction; durable stores
// implement it. The task row (ID, status working, origin bytes unchanged,
// authorization binding: endpoint, tenant, principal), the job row and an
// outbox row commit together, and the task is readable through FindTask
// before Enqueue returns.
type Enqueuer interface {
	// Enqueue creates the task and its job as the type says; see
	// EnqueueOptions.IdempotencyKey for retried creations.
	Enqueue(ctx context.Context, cc *task.CreationContext, opts EnqueueOptions) (task.Task, error)
}

// EnqueueOptions configure one Enqueue. Zero values mean the store's
// defaults.
type EnqueueOptions struct {
	// IdempotencyKey, when set, makes a retried creation with the same key,
	// tenant, endpoint and tool return the existing task instead of a new
	// one. A retry whose arguments differ fails with ErrIdempotencyConflict;
	// arguments are compared as JSON values (task.Origin.SameArguments), so
	// white space, member order and string escapes do not matter, number
	// spellings do. Nothing else of the origin is compared: the task
	// returned may come from a call of another protocol revision, or of
	// the tool as declared with another output schema or input kinds,
	// which the server does not hand out (it accepts only a handle whose
	// task's origin is task.Origin.SameCall with the call's). The caller
	// must check the returned task's origin; durable.Set.Serve answers
	// such a retry with a tool error.
	IdempotencyKey string
	// MaxAttempts bounds the handler failures of the job (default
	// DefaultMaxAttempts, at most MaxMaxAttempts); interrupted runs do not
	// count.
	MaxAttempts int
	// TTL is how long the task is kept from creation (default 24 h).
	TTL time.Duration
	// PollInterval is suggested to clients (default 1 s).
	PollInterval time.Duration
	// RunAt delays the first claim (default now).
	RunAt time.Time
	// Queue names the job's queue (default DefaultQueue); it must pass
	// CheckQueue. Only a claim of that queue takes the job.
	Queue string
	// Priority orders the job within its queue: HighestPriority (1)
	// first, LowestPriority (4) last; zero means DefaultPriority. Other
	// values fail the creation before anything is written.
	Priority int
}

// DefaultMaxAttempts is the MaxAttempts of a job enqueued without one. With
// worker.DefaultBackoff, the waits before the tenth failure add up to
// between about 4¼ and 8½ minutes, so a fault of a few minutes delays a
// task rather than failing it; a handler that reports a longer outage of a
// dependency (a database failover, a full disk, an unreachable service)
// with worker.Unavailable is retried past MaxAttempts for the worker's
// RetryWindow (FailureUnavailable).
const DefaultMaxAttempts = 10

// MaxMaxAttempts is the largest MaxAttempts a store keeps (the range of a
// 32-bit column); a creation with more fails before anything is written.
const MaxMaxAttempts = 1<<31 - 1

// ErrIdempotencyConflict: an idempotency key was reused with other arguments.
var ErrIdempotencyConflict = errors.New("backend: idempotency key reused with different arguments")

// ErrInvalidText: text a store keeps as such (an idempotency key, the
// endpoint, tenant, principal or tool of a creation, an input request key,
// a status message) is not valid UTF-8 or holds a NUL byte, or a
// creation's arguments are not valid UTF-8. Every store refuses the same
// values, before writing anything; the error names the field, never its
// bytes.
var ErrInvalidText = errors.New("backend: text must be valid UTF-8 without NUL bytes")

// BatchEnqueuer is an optional extension of Enqueuer for bulk work: a store
// that implements it creates many tasks, with their jobs and outbox rows,
// in one transaction and one commit.
type BatchEnqueuer interface {
	// EnqueueBatch creates a task for each item, as Enqueue would, and
	// returns their snapshots in the items' order. Either every task is
	// created or, on error, none is. Items cannot carry an idempotency key
	// (ErrBatchIdempotencyKey): a batch whose outcome is unknown, after a
	// timeout, creates its tasks again when retried. A batch holds at most
	// MaxEnqueueBatch items; an empty one does nothing.
	EnqueueBatch(ctx context.Context, items []BatchItem) ([]task.Task, error)
}

// BatchItem is one task of EnqueueBatch.
type BatchItem struct {
	// Creation is the task to create, as Enqueue's cc.
	Creation *task.CreationContext
	// Options configure its job, as Enqueue's opts; an idempotency key is
	// refused (ErrBatchIdempotencyKey).
	Options EnqueueOptions
}

// MaxEnqueueBatch bounds the items of one EnqueueBatch call.
const MaxEnqueueBatch = 1000

// ErrBatchIdempotencyKey: an EnqueueBatch item carried an idempotency key.
var ErrBatchIdempotencyKey = errors.New("backend: EnqueueBatch items cannot carry an idempotency key")

// BatchCompleter is an optional extension of JobStore: a JobStore that
// implements it completes many jobs in one transaction, which is the main
// throughput lever of a durable queue (one commit, one fsync, for many
// jobs). The runtime batches concurrent completions through it when it is
// available.
type BatchCompleter interface {
	// CompleteBatch applies Complete to every item in one transaction.
	// lost[i] reports that item i's lease was no longer current, in which
	// case nothing was written for it; the other items commit. An error
	// means nothing was committed.
	CompleteBatch(ctx context.Context, items []Completion) (lost []bool, err error)
}

// Completion is one item of CompleteBatch.
type Completion struct {
	// Lease is the claim being completed: when it is no longer current,
	// the item is lost and nothing is written for it.
	Lease Lease
	// Result is the tool result the task completes with, already
	// validated against the origin, as for Complete.
	Result *mcp.CallToolResult
	// ResultJSON, when set, is Result's JSON encoding; the store keeps it
	// instead of encoding Result again.
	ResultJSON []byte
	// Message is the message argument of Complete.
	Message string
	// Progress, when set, is the progress count of a report still pending
	// when the handler returned: the store sets the task's count to it as
	// it completes the task (see ProgressReporter). Nil keeps the count.
	Progress *task.Progress
	// Checkpoint, when not nil, replaces the job's checkpoint (see
	// Checkpointer) in the completing transaction, under the item's
	// fence: a lost item saves neither its completion nor its
	// checkpoint. It must be 1 to MaxCheckpointBytes bytes, or the whole
	// call fails with an error wrapping ErrInvalidCheckpoint before
	// anything is written. The job's checkpoint size and time
	// (JobInfo.CheckpointBytes, CheckpointAt) show it; unlike
	// SaveCheckpoints, it adds no EventCheckpoint step to the task's
	// history, whose completed step follows it. Nil keeps the checkpoint.
	Checkpoint []byte
}

// ProgressReporter is an optional extension of JobStore: a JobStore that
// implements it records the progress a running job reports (through the
// worker runtime's Job.ReportProgress). Without it, the runtime drops
// reports.
type ProgressReporter interface {
	// ReportProgress sets the status message of the lease's task to
	// message and its progress count to p (nil: none), under the lease
	// like every fenced write: when the lease is not the job's live claim
	// it returns ErrLeaseLost and changes nothing. The task's status does
	// not change. The change is committed with an outbox row and the task
	// ID published after commit, so that listeners see it and tasks/get
	// returns message as the task's statusMessage. A message that is not
	// storable text fails with ErrInvalidText, and numbers that are not
	// finite and non-negative fail too, before anything is written.
	ReportProgress(ctx context.Context, l Lease, message string, p *task.Progress) error
}

// MaxProgressMessage bounds the bytes of a status message a running job
// reports, which the runtime and the stores enforce.
const MaxProgressMessage = 1024

// ErrInvalidProgress: a progress report's message is longer than
// MaxProgressMessage or not storable text, or its numbers are not finite
// and non-negative. The worker runtime checks reports before queueing
// them, and a ProgressReporter refuses such values before writing.
var ErrInvalidProgress = errors.New("backend: invalid progress report")

// Pruner is an optional extension of JobStore, for stores whose rows outlive
// their use: store/sqlite and store/postgres implement it. When the JobStore
// the worker runtime drives implements it, the runtime prunes on its cleanup
// schedule (worker.Options.CleanupEvery, in batches of
// worker.Options.CleanupBatch), next to JobStore.DeleteExpired, so that a
// long-running deployment keeps its tables bounded by its traffic over the
// retention horizons rather than by its age.
type Pruner interface {
	// PruneOutbox deletes at most limit outbox rows created before the
	// given time, oldest first, and returns how many.
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneJobs deletes at most limit job rows of tasks that finished
	// (job state done) before the given time, by the task's last update,
	// and returns how many. The task rows, which hold what clients read,
	// stay until their TTL passes; a finished job is read by operators
	// only (its attempt, failure and interrupted-run counts).
	PruneJobs(ctx context.Context, before time.Time, limit int) (int, error)
}

// Checkpointer is an optional extension of JobStore: a JobStore that
// implements it keeps one checkpoint per job, a small opaque value a
// running handler saves (through the worker runtime's Job.Checkpoint) so
// that a later run of the same job resumes where the last one stopped
// instead of from the start. store/memory, store/sqlite and
// store/postgres implement it.
//
// A checkpoint is kept with the job: every later claim of the job (after
// a release, a retry, an interrupted run or an input round) carries the
// last one in JobRow.Checkpoint, and it goes when the job row goes (with
// its task, or pruned with the finished job, see Pruner). A checkpoint
// does not change the task as its client sees it: no status, message,
// outbox row or hint. The task's history records each one saved with
// SaveCheckpoints as an EventCheckpoint step with its size, never its
// content; a checkpoint can also be saved with a batched completion
// (Completion.Checkpoint), which records no step of its own.
type Checkpointer interface {
	// SaveCheckpoints replaces the checkpoint of each item's job with its
	// Data, under the item's lease like every fenced write, in one
	// transaction: lost[i] reports that item i's lease was not the job's
	// live claim, in which case nothing was written for it; the other
	// items commit. An item whose Data is empty or longer than
	// MaxCheckpointBytes fails the whole call with an error wrapping
	// ErrInvalidCheckpoint before anything is written; so does a call of
	// more than MaxCheckpointBatch items. Two items of the same lease
	// both apply, in order: the last one stays. An error means nothing
	// was committed.
	SaveCheckpoints(ctx context.Context, items []CheckpointWrite) (lost []bool, err error)
}

// CheckpointWrite is one item of SaveCheckpoints.
type CheckpointWrite struct {
	// Lease is the claim whose job the checkpoint belongs to.
	Lease Lease
	// Data is the checkpoint: 1 to MaxCheckpointBytes bytes, kept as
	// they are.
	Data []byte
}

// Bounds of checkpoints.
const (
	// MaxCheckpointBytes bounds the bytes of one checkpoint (64 KiB): a
	// checkpoint is read with every claim of its job, so it holds where a
	// run got to (a cursor, a page number, the results of a few steps),
	// not the work's data.
	MaxCheckpointBytes = 64 << 10
	// MaxCheckpointBatch bounds the items of one SaveCheckpoints call.
	MaxCheckpointBatch = 256
)

// ErrInvalidCheckpoint: a checkpoint is empty or larger than
// MaxCheckpointBytes, or a SaveCheckpoints call holds more than
// MaxCheckpointBatch items. Nothing was written.
var ErrInvalidCheckpoint = errors.New("backend: invalid checkpoint")
