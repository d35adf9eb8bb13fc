// Package worker runs durable tasks: it claims jobs from a [backend.JobStore]
// (a durable store's Jobs()), runs the handler registered for each job's
// kind (the tool name), keeps the job's lease alive while the handler runs,
// and commits exactly one fenced outcome per claim.
//
// # Use
//
//	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher()})
//	if err != nil { ... }
//	err = worker.AddHandler(rt, "summarize", func(ctx context.Context, job *worker.Job, in SummarizeIn) (SummarizeOut, error) {
//		...
//	})
//	if err != nil { ... }
//	err = rt.Run(ctx) // until ctx is done, then drains
//
// AddHandler decodes the tool arguments into In and encodes Out as the result's
// structuredContent with a text mirror; AddRawHandler gives the handler the raw
// arguments ([Job.Arguments]) and takes a complete *[mcp.CallToolResult].
// Every result is checked with [task.Validator.Result] against the task's
// origin before it is committed: a task never completes with a value the
// server would refuse to deliver.
//
// # Outcomes
//
// A handler run ends in exactly one store write, fenced by its Lease:
//
//	result, nil                       → Complete (validated; invalid → Fail, no retry)
//	ToolError(msg)                    → Complete with isError: true
//	ErrInputPending (Job.Ask)         → RequestInput: task input_required, job parked
//	*mcp.Error                        → Fail with that error, no retry
//	Permanent(err)                    → Fail {-32603 "The task failed."}, no retry
//	Unavailable(err)                  → Retry after Options.Backoff; once MaxAttempts
//	                                    are used and the first failure is
//	                                    Options.RetryWindow old, Fail as below
//	other error, panic                → Retry after Options.Backoff; after MaxAttempts
//	                                    Fail {-32603 "The task failed after repeated attempts."}
//	any error after the run timeout   → as an other error, category timeout
//	(WithRunTimeout)
//	(no outcome: the lease expired,   → rescued by RescueExpired (or RescueDead) and run
//	or the process died)                again; after Options.MaxInterruptedRuns, Fail as above
//
// Retries are bounded by count and, for infrastructure faults, by time.
// DefaultBackoff waits exponentially from 1 s to 5 min, each wait between
// half its ceiling and the ceiling, so [backend.DefaultMaxAttempts] (10)
// ordinary failures take 255–511 s in all before the final one. A handler
// that returns Unavailable(err) says that a database, a service or the
// network it needs is down: its job goes on being retried, every 2.5–5 min
// once the count is used up, and fails only at the first failure at least
// [Options.RetryWindow] (default 30 min) after its first, so a fault shorter
// than the window delays tasks without failing them, whatever MaxAttempts
// is. A run lost to a crash, a kill or a lost lease is an interrupted run,
// counted apart from handler failures, so crashes never use up
// MaxAttempts; MaxInterruptedRuns (default 20) ends a job that brings its
// process down every time. A rescued job keeps its place in the queue,
// and its task's status message says that the run was interrupted
// ([backend.InterruptedMessage]) until the next run reports.
//
// A process that dies does not hold its jobs for their leases: with a
// store that is a [backend.LivenessRescuer] (store/sqlite, store/postgres,
// store/memory), Run holds an instance mark that ends with the process
// and names it in its claims, and every [Options.FastRescueEvery] (1 s)
// takes back the jobs of instances whose mark is gone: within about two
// seconds of their death on PostgreSQL, and at the first pass of a worker
// that starts on the same SQLite node. [Options.DisableFastRecovery] turns it
// off (PostgreSQL behind a pooler that does not keep sessions).
//
// The handler's context carries the reason it was cancelled, for
// [context.Cause]: [ErrRunTimeout] (the run outlived its kind's
// [WithRunTimeout]), [ErrCancelRequested] (the client asked to cancel: an error
// return then cancels the task), ErrShuttingDown (the process is stopping:
// an error return releases the job to run again, never failing or cancelling
// it) or [backend.ErrLeaseLost] (another claim may own the job now: nothing is
// written for this run). A result returned without an error completes the
// task even after a cancel request: completion may win that race.
//
// Error texts are never sent to clients, except ToolError messages and
// *mcp.Error values, which the handler chooses to expose.
//
// # Input and replay
//
// [Job.Ask] returns a stored answer or records a pending request and
// returns ErrInputPending. When the handler returns it, every request asked
// in the run without an answer is committed at once, the task becomes
// input_required and the job is parked. When the client has answered all of
// them, the job becomes available again and its handler runs again from the
// start, this time finding the answers. Handlers must therefore be
// deterministic up to their Ask calls (the same keys for the same requests)
// and any side effect before an Ask must be idempotent. An input round is
// not an attempt: the resumed run has the same Job.Attempt as the run that
// asked, uses up nothing of MaxAttempts, and is counted in
// [Job.InputRounds]; its claim still gets a new fencing token
// (backend.Lease.Attempt), so the asking run can write nothing more.
//
// # Progress
//
// Job.ReportProgress (and ReportStatus) set the task's status message,
// with an optional progress count, through the store's optional
// backend.ProgressReporter. A per-run coalescer writes at most one report per
// Options.ProgressInterval, the first an interval after the claim, always the
// latest one, and a report still waiting when the handler returns right
// before the final write (a batched completion carries its count). A
// report costs no allocation and no timer of its own: the run's lease keeper
// wakes a report that waits, and a write goroutine, which belongs to the
// run and ends before the final write, starts only when a write is due.
//
// The count never goes backwards: a run starts from the task's count as of
// its claim, a report whose current is below the highest count so far is
// dropped, and a report without numbers keeps that count. A re-run that
// starts over, or resumes from a checkpoint older than its last report,
// therefore never shows a client less done than before.
//
// # Checkpoints
//
// [Job.Checkpoint] saves a small value (JSON, at most
// [backend.MaxCheckpointBytes]) with the job, under the lease, through the
// store's optional [backend.Checkpointer]; concurrent checkpoints of
// several jobs are batched into one transaction. Every later run of the
// job (after a retry, a crash, a lost lease, a shutdown or an input round)
// reads the last one with [Job.LastCheckpoint], carried by its claim, and
// resumes from it:
//
//	var done int // pages done
//	if _, err := job.LastCheckpoint(&done); err != nil { ... }
//	for page := done + 1; page <= in.Pages; page++ {
//		fetch(ctx, page)
//		if err := job.Checkpoint(page); err != nil { return Out{}, err }
//		_ = job.ReportProgress(fmt.Sprintf("page %d of %d", page, in.Pages), float64(page), float64(in.Pages))
//	}
//
// Work done after the last checkpoint is done again by the run that
// resumes, so each step must still be idempotent; a checkpoint only bounds
// how much is redone. The task's history (package console) shows each
// checkpoint's size, never its content.
//
// Checkpoint waits for its transaction. [Job.CheckpointLater] does not: it
// holds the value, and the store gets it with the run's batched completion
// (in the completing transaction, at no cost of its own), at the run's next
// heartbeat, or before any other final write, whichever comes first. A
// crash or a lost lease loses the value not yet written, so it suits
// cursors over idempotent work; Checkpoint suits the moment before a side
// effect that must not be repeated.
//
// # Leases and cancellation
//
// Each running job's lease is kept by a timer that heartbeats it every
// HeartbeatEvery and then reads the task's cancel intent; with
// Options.Events, a hint for the task makes it read the intent at once. A
// heartbeat answered with backend.ErrLeaseLost, or a local lease deadline
// that passes while heartbeats fail, cancels the handler with cause
// backend.ErrLeaseLost. All writes name the Lease, so a run whose lease was
// lost can never commit; a write refused with backend.ErrLeaseLost is logged
// and counted, nothing more. Transient write failures are retried briefly
// while the lease lasts; if they persist, the lease expires and the job is
// rescued (at-least-once).
//
// # Loops and shutdown
//
// Run owns every goroutine: one claim loop, one rescue and one cleanup loop,
// the completion batchers, and per running job a handler goroutine and,
// while a heartbeat, a cancel check or a progress write is under way, one
// more. Concurrency is
// bounded by a semaphore of Options.Concurrency slots, and each served
// queue's by one of its own (QueueConfig.MaxWorkers; Concurrency when
// Options.Queues is nil). A claim takes the jobs of one queue; up to two
// claims run at once, of all queues together (the queues take turns), each
// asking for at most the free slots, of the runtime and of the queue, that
// the other has not reserved (and ClaimBatch), so that a task created
// while a claim is under way is claimed on its hint at once rather than
// after that claim returns. A slot that frees wakes the claims of its
// queue; a hint or a rescue, those of every queue.
// After a claim that returned nothing the loop sleeps PollInterval, or less
// when an event hint arrives or a slot frees. When
// Run's context is done it stops claiming, waits up to ShutdownGrace for
// running handlers, cancels the rest and releases their jobs, and returns
// once all its goroutines have ended.
//
// # Logs and metrics
//
// Log lines carry the kind, the attempt and the text of the error at hand,
// cut to 1,000 bytes, so that an operator can tell why a run failed. They
// never carry task IDs, arguments, results or panic values: in a handler's
// error text, the task ID and every argument string (also as %q escapes it)
// or number of at least 4 bytes are replaced by "<task>" and "<argument>"
// (a safety net; handlers should keep
// secrets out of their errors), and store errors name no task. Metrics
// labels are bounded: registered kinds or "unknown", and the Transition and
// FailureCategory constants. The FailureCategory of a failed run also goes
// to the store with its Retry or Fail, which records it in the task's
// history for operators (package console); the error's text does not.
package worker
