package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// JobState is the state of a task's job, named as the durable stores name
// it in their jobs tables.
type JobState string

// Job states.
const (
	// JobAvailable: claimable once its run-at time has come.
	JobAvailable JobState = "available"
	// JobRunning: claimed, under a lease.
	JobRunning JobState = "running"
	// JobAwaitingInput: parked until every input request is answered (or
	// cancellation is requested).
	JobAwaitingInput JobState = "awaiting_input"
	// JobDone: the task ended.
	JobDone JobState = "done"
)

// Short names for the states inside the package.
const (
	jobAvailable = JobAvailable
	jobRunning   = JobRunning
	jobAwaiting  = JobAwaitingInput
	jobDone      = JobDone
)

// job is the job of an enqueued task.
type job struct {
	state        JobState
	kind         string
	queue        string
	priority     int
	attempt      int64
	failures     int
	interrupted  int
	inputRounds  int
	maxAttempts  int
	firstFailure time.Time // of the first Retry; zero: none
	runAt        time.Time
	leaseExpires time.Time         // while running
	worker       string            // while running
	instance     string            // while running: the claim's ClaimParams.Instance
	trace        task.TraceContext // of the creating request, as the stores keep it
	// category is the failure category of the change being applied, for
	// the history events observe records of it; observe clears it.
	category backend.FailureCategory
	// checkpoint is the last one saved (nil: none), checkpointAt when;
	// saved is the size of the checkpoint the change being applied saves,
	// for the event observe records of it (0: none); observe clears it.
	checkpoint   []byte
	checkpointAt time.Time
	saved        int
}

// JobInfo is what an operator reads of a job in a durable store's jobs
// table: its state and counters.
type JobInfo struct {
	// State is the job's state, named as in the durable stores.
	State JobState
	// Kind is the job kind: the tool name.
	Kind string
	// Attempt is the attempt counter: the number of claims so far.
	Attempt int64
	// Failures counts the runs whose handler failed (Retry);
	// InterruptedRuns the runs whose lease expired (RescueExpired);
	// InputRounds the runs that asked for input (RequestInput), which
	// are not attempts (see backend.JobRow.AttemptNumber).
	Failures, InterruptedRuns, InputRounds int
	// MaxAttempts bounds Failures.
	MaxAttempts int
	// RunAt is when the job is due.
	RunAt time.Time
	// Worker names the worker of the current claim while State is
	// JobRunning; empty otherwise.
	Worker string
	// LeaseExpires is when the current claim's lease ends while State is
	// JobRunning; zero otherwise.
	LeaseExpires time.Time
}

// Job returns the state of the job of a task Enqueue made, whether or not
// the task has expired, until the task is deleted. found is false for
// unknown and deleted tasks and for tasks Create made, which have no job.
func (m *Manager) Job(taskID string) (info JobInfo, found bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.tasks[taskID]
	if e == nil || e.job == nil {
		return JobInfo{}, false
	}
	j := e.job
	return JobInfo{State: j.state, Kind: j.kind, Attempt: j.attempt, Failures: j.failures, InterruptedRuns: j.interrupted,
		InputRounds: j.inputRounds, MaxAttempts: j.maxAttempts, RunAt: j.runAt, Worker: j.worker, LeaseExpires: j.leaseExpires}, true
}

// Jobs implements backend.Store: the JobStore of the worker runtime, over
// the manager's tasks. It implements backend.BatchCompleter,
// backend.ProgressReporter, backend.Checkpointer, backend.LivenessRescuer
// and backend.QueuesClaimer too, and follows backend.JobStore to the letter:
// every fenced write applies only while the job runs under the lease's
// attempt and now (Options.Now) is before the lease's expiry, and returns
// backend.ErrLeaseLost, changing nothing, otherwise. Fenced writes ignore
// the task's TTL until the task is deleted; claims skip expired tasks.
// Every change a client can see is published after it is readable.
func (m *Manager) Jobs() backend.JobStore { return jobStore{m} }

// jobStore is the Manager's job side, kept off *Manager because its
// methods are the worker runtime's and some share names with the trusted
// methods.
type jobStore struct{ m *Manager }

var (
	_ backend.BatchCompleter   = jobStore{}
	_ backend.ProgressReporter = jobStore{}
	_ backend.Checkpointer     = jobStore{}
	_ backend.LivenessRescuer  = jobStore{}
	_ backend.QueuesClaimer    = jobStore{}
)

// Claim implements backend.JobStore. It leases up to p.Limit due jobs of
// the queue p.Queue (backend.DefaultQueue when empty) and of the given
// kinds (all kinds when none are given), ordered by priority, then run-at
// time, then creation time, then task ID. Claimable are available jobs of unexpired
// tasks, including jobs waiting for input whose task has a cancellation
// request. A zero p.Now means the manager's clock. It costs O(n log n) in
// the tasks held.
func (s jobStore) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Limit < 1 || p.Lease < time.Millisecond {
		return nil, errors.New("memory: Claim needs a positive Limit and a Lease of at least 1 ms")
	}
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claimLocked(p, backend.QueueClaim{Queue: p.Queue, Kinds: p.Kinds, Limit: p.Limit}), nil
}

// ClaimQueues implements backend.QueuesClaimer: the claims of qs under
// one hold of the lock, each as Claim makes it.
func (s jobStore) ClaimQueues(ctx context.Context, p backend.ClaimParams, qs []backend.QueueClaim) ([][]backend.JobRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := backend.CheckQueueClaims(p, qs); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]backend.JobRow, len(qs))
	for i, q := range qs {
		out[i] = m.claimLocked(p, q)
	}
	return out, nil
}

// claimLocked claims the jobs of q with p's worker, lease, time and
// instance. m.mu is held.
func (m *Manager) claimLocked(p backend.ClaimParams, q backend.QueueClaim) []backend.JobRow {
	now := p.Now
	if now.IsZero() {
		now = m.now()
	}
	queue := cmp.Or(q.Queue, backend.DefaultQueue)
	var due []*entry
	for _, e := range m.tasks {
		j := e.job
		if j == nil || j.state != jobAvailable || j.queue != queue || j.runAt.After(now) || e.expired(now) ||
			(len(q.Kinds) > 0 && !slices.Contains(q.Kinds, j.kind)) {
			continue
		}
		due = append(due, e)
	}
	slices.SortFunc(due, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.job.priority, b.job.priority), a.job.runAt.Compare(b.job.runAt), a.snap.CreatedAt().Compare(b.snap.CreatedAt()),
			cmp.Compare(a.snap.ID(), b.snap.ID()))
	})
	rows := make([]backend.JobRow, 0, min(len(due), q.Limit))
	for _, e := range due[:min(len(due), q.Limit)] {
		b, j := e.mark(), e.job
		j.state, j.attempt, j.leaseExpires, j.worker = jobRunning, j.attempt+1, now.Add(p.Lease), p.Worker
		j.instance = p.Instance
		e.observe(b, now)
		rows = append(rows, backend.JobRow{
			Lease: backend.Lease{TaskID: e.snap.ID(), Attempt: j.attempt}, Kind: j.kind, Origin: e.snap.Origin(),
			Failures: j.failures, MaxAttempts: j.maxAttempts, InterruptedRuns: j.interrupted, InputRounds: j.inputRounds,
			FirstFailure: j.firstFailure, Responses: maps.Clone(e.responses), LeaseExpires: j.leaseExpires,
			CancelRequested: e.cancelRequested, Trace: j.trace, Checkpoint: slices.Clone(j.checkpoint),
			Progress: progressOf(e.snap),
		})
	}
	return rows
}

// fencedLocked returns the entry whose job runs under l at the manager's
// current time, or backend.ErrLeaseLost.
func (m *Manager) fencedLocked(l backend.Lease) (*entry, time.Time, error) {
	now := m.now()
	e := m.tasks[l.TaskID]
	if e == nil || e.job == nil || e.job.state != jobRunning || e.job.attempt != l.Attempt || !now.Before(e.job.leaseExpires) {
		return nil, now, backend.ErrLeaseLost
	}
	return e, now, nil
}

// fenced applies change to the entry whose job runs under l, under the
// lock. change returns the task's new parameters, or nil when the task
// does not change as a client sees it; they are validated before anything
// is applied, and apply, when not nil, then changes the job. A visible
// change is stamped and published after the lock is released.
func (m *Manager) fenced(ctx context.Context, l backend.Lease,
	change func(e *entry, now time.Time) (p *task.Params, apply func(), err error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	visible, err := m.fencedChange(l, change)
	if err == nil && visible {
		m.publisher.Publish(l.TaskID)
	}
	return err
}

func (m *Manager) fencedChange(l backend.Lease,
	change func(e *entry, now time.Time) (*task.Params, func(), error)) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, now, err := m.fencedLocked(l)
	if err != nil {
		return false, err
	}
	p, apply, err := change(e, now)
	if err != nil {
		return false, err
	}
	b := e.mark()
	defer e.observe(b, now)
	if p != nil {
		p.LastUpdatedAt = m.later(p.LastUpdatedAt)
		snap, err := task.New(*p)
		if err != nil {
			return false, err
		}
		e.snap = snap
	}
	if apply != nil {
		apply()
	}
	return p != nil, nil
}

// end returns the change that ends a task in a terminal status: the job is
// done and the outstanding requests are gone. The progress count is kept.
func end(e *entry, status task.Status, message string, res *mcp.CallToolResult, rpcErr *mcp.Error) (*task.Params, func()) {
	p := e.snap.Params()
	p.Status, p.StatusMessage, p.InputRequests, p.Result, p.Error = status, message, nil, res, rpcErr
	return &p, func() {
		e.outstanding = nil
		e.job.state, e.job.leaseExpires, e.job.worker = jobDone, time.Time{}, ""
	}
}

// Heartbeat implements backend.JobStore: it extends a live lease to
// now+lease.
func (s jobStore) Heartbeat(ctx context.Context, l backend.Lease, lease time.Duration) error {
	if lease < time.Millisecond {
		return errors.New("memory: Heartbeat needs a lease of at least 1 ms")
	}
	return s.m.fenced(ctx, l, func(e *entry, now time.Time) (*task.Params, func(), error) {
		return nil, func() { e.job.leaseExpires = now.Add(lease) }, nil
	})
}

// RequestInput implements backend.JobStore. It fails with
// backend.ErrKeyReused, changing nothing and keeping the lease, when a key
// was requested before in the task's life. Otherwise the requests replace
// any outstanding ones, the task turns input_required with message, an
// input round is counted, and the lease ends: the job waits for the answers (or, when cancellation was
// requested, is claimable at once), keeping its run-at time.
func (s jobStore) RequestInput(ctx context.Context, l backend.Lease, reqs mcp.InputRequests, message string) error {
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if err := storerules.CheckRequests(reqs); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	reqs = cloneRequests(reqs)
	return s.m.fenced(ctx, l, func(e *entry, _ time.Time) (*task.Params, func(), error) {
		for k := range reqs {
			if e.used[k] {
				return nil, nil, backend.ErrKeyReused
			}
		}
		p := e.snap.Params()
		p.Status, p.StatusMessage, p.InputRequests = task.InputRequired, message, reqs
		return &p, func() {
			for k := range reqs {
				e.used[k] = true
			}
			e.outstanding = reqs
			e.job.state, e.job.leaseExpires, e.job.worker = jobAwaiting, time.Time{}, ""
			e.job.inputRounds++
			if e.cancelRequested {
				e.job.state = jobAvailable
			}
		}, nil
	})
}

// cloneRequests copies input requests, so that the caller's later changes
// do not reach the stored task.
func cloneRequests(reqs mcp.InputRequests) mcp.InputRequests {
	out := make(mcp.InputRequests, len(reqs))
	for k, r := range reqs {
		c := *r
		c.Params = slices.Clone(r.Params)
		out[k] = &c
	}
	return out
}

// Complete implements backend.JobStore: under a live lease it ends the task
// completed with res (already validated against the origin) and message.
func (s jobStore) Complete(ctx context.Context, l backend.Lease, res *mcp.CallToolResult, message string) error {
	if res == nil {
		return errors.New("memory: a result is required")
	}
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return s.m.fenced(ctx, l, func(e *entry, _ time.Time) (*task.Params, func(), error) {
		p, apply := end(e, task.Completed, message, res, nil)
		return p, apply, nil
	})
}

// Fail implements backend.JobStore: under a live lease it ends the task
// failed with the client-safe rpcErr and message, recording the failure
// category c on the failed event.
func (s jobStore) Fail(ctx context.Context, l backend.Lease, rpcErr *mcp.Error, message string, c backend.FailureCategory) error {
	if rpcErr == nil {
		return errors.New("memory: an error is required")
	}
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return s.m.fenced(ctx, l, func(e *entry, _ time.Time) (*task.Params, func(), error) {
		p, apply := end(e, task.Failed, message, nil, rpcErr)
		return p, func() { e.job.category = c.Recorded(); apply() }, nil
	})
}

// Cancel implements backend.JobStore: under a live lease it ends the task
// cancelled with message.
func (s jobStore) Cancel(ctx context.Context, l backend.Lease, message string) error {
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return s.m.fenced(ctx, l, func(e *entry, _ time.Time) (*task.Params, func(), error) {
		p, apply := end(e, task.Cancelled, message, nil, nil)
		return p, apply, nil
	})
}

// Retry implements backend.JobStore. It counts a failure (noting the time
// of the job's first) and makes the job available at runAt (zero: now) with
// message as the task's status message; the failure that reaches the job's
// MaxAttempts, unless c is backend.FailureUnavailable, fails the task
// instead, with the client-safe error {"code":-32603,"message":"The task failed
// after repeated attempts."} and no message. The failure category c is
// recorded on the retry event (and the failed one).
func (s jobStore) Retry(ctx context.Context, l backend.Lease, runAt time.Time, message string, c backend.FailureCategory) error {
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return s.m.fenced(ctx, l, func(e *entry, now time.Time) (*task.Params, func(), error) {
		j := e.job
		count := func() {
			j.failures, j.category = j.failures+1, c.Recorded()
			if j.firstFailure.IsZero() {
				j.firstFailure = now
			}
		}
		if j.failures+1 >= j.maxAttempts && c != backend.FailureUnavailable {
			p, apply := end(e, task.Failed, "", nil, backend.ExhaustedError())
			return p, func() { count(); apply() }, nil
		}
		if runAt.IsZero() {
			runAt = now
		}
		p := e.snap.Params()
		p.StatusMessage = message
		return &p, func() {
			count()
			j.state, j.runAt, j.leaseExpires, j.worker = jobAvailable, runAt, time.Time{}, ""
		}, nil
	})
}

// Release implements backend.JobStore: the job is available again at once,
// in its place in the queue, and no failure is counted. The task does not
// change, so nothing is published.
func (s jobStore) Release(ctx context.Context, l backend.Lease) error {
	return s.m.fenced(ctx, l, func(e *entry, _ time.Time) (*task.Params, func(), error) {
		return nil, func() { e.job.state, e.job.leaseExpires, e.job.worker = jobAvailable, time.Time{}, "" }, nil
	})
}

// CancelRequested implements backend.JobStore. It returns task.ErrNotFound
// for unknown and expired tasks.
func (s jobStore) CancelRequested(ctx context.Context, taskID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveLocked(taskID)
	if e == nil {
		return false, task.ErrNotFound
	}
	return e.cancelRequested, nil
}

// RescueExpired implements backend.JobStore. It takes at most p.Limit
// running jobs whose lease expired at or before p.Now (zero: the manager's
// clock), earliest expiry first, then by task ID, and counts an interrupted
// run for each: the job whose interrupted runs reach p.MaxInterruptedRuns
// fails its task with the client-safe error {"code":-32603,"message":"The
// task failed after repeated attempts."}; the others become available again
// with their run-at time kept, and their task's status message
// backend.InterruptedMessage. Failures are not touched.
func (s jobStore) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	return s.m.rescue(ctx, p, func(j *job, now time.Time) bool { return !now.Before(j.leaseExpires) })
}

// rescue takes at most p.Limit running jobs that take selects, earliest
// lease expiry first, then by task ID, and counts an interrupted run for
// each: the job whose interrupted runs reach p.MaxInterruptedRuns fails
// its task, the others become available with their run-at time kept and
// their task's status message backend.InterruptedMessage. take is called
// under m.mu.
func (m *Manager) rescue(ctx context.Context, p backend.RescueParams, take func(j *job, now time.Time) bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if p.Limit < 1 {
		return 0, nil
	}
	m.mu.Lock()
	now := p.Now
	if now.IsZero() {
		now = m.now()
	}
	var expired []*entry
	for _, e := range m.tasks {
		if e.job != nil && e.job.state == jobRunning && take(e.job, now) {
			expired = append(expired, e)
		}
	}
	slices.SortFunc(expired, func(a, b *entry) int {
		return cmp.Or(a.job.leaseExpires.Compare(b.job.leaseExpires), cmp.Compare(a.snap.ID(), b.snap.ID()))
	})
	expired = expired[:min(len(expired), p.Limit)]
	var publish []string
	for _, e := range expired {
		b, j := e.mark(), e.job
		j.interrupted++
		var q *task.Params
		var apply func()
		if j.interrupted < max(p.MaxInterruptedRuns, 1) {
			j.state, j.leaseExpires, j.worker, j.instance = jobAvailable, time.Time{}, "", ""
			if e.snap.StatusMessage() == backend.InterruptedMessage {
				e.observe(b, now)
				continue
			}
			tp := e.snap.Params()
			tp.StatusMessage = backend.InterruptedMessage
			q = &tp
		} else {
			q, apply = end(e, task.Failed, "", nil, backend.ExhaustedError())
		}
		if now.After(q.LastUpdatedAt) { // stamped at the rescue's time, as the durable stores do
			q.LastUpdatedAt = now
		}
		snap, err := task.New(*q)
		if err != nil {
			m.mu.Unlock()
			return 0, err
		}
		e.snap = snap
		if apply != nil {
			apply()
		}
		e.observe(b, now)
		publish = append(publish, snap.ID())
	}
	m.mu.Unlock()
	for _, id := range publish {
		m.publisher.Publish(id)
	}
	return len(expired), nil
}

// DeleteExpired implements backend.JobStore. It deletes at most limit tasks
// (with their jobs) whose TTL passed at or before now (zero: the manager's
// clock), earliest expiry first, then by task ID, tasks Create made
// included.
func (s jobStore) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if limit < 1 {
		return 0, nil
	}
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.IsZero() {
		now = m.now()
	}
	var expired []*entry
	for _, e := range m.tasks {
		if e.expired(now) {
			expired = append(expired, e)
		}
	}
	slices.SortFunc(expired, func(a, b *entry) int {
		return cmp.Or(a.expires.Compare(b.expires), cmp.Compare(a.snap.ID(), b.snap.ID()))
	})
	expired = expired[:min(len(expired), limit)]
	for _, e := range expired {
		m.deleteLocked(e.snap.ID())
	}
	return len(expired), nil
}
