package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// Jobs returns the store's backend.JobStore, for worker.Options.Store: the
// fenced job writes of the worker runtime, over the same database. It
// implements backend.BatchCompleter, backend.ProgressReporter,
// backend.Checkpointer, backend.Pruner, backend.LivenessRescuer and
// backend.QueuesClaimer too. It is valid until Close.
func (s *Store) Jobs() backend.JobStore { return jobStore{s} }

// jobStore is the Store's job side: the methods only the worker runtime
// calls, kept off *Store so that an application's handle shows what it
// uses.
type jobStore struct{ s *Store }

// Heartbeat implements backend.JobStore: it extends a live lease to now+lease.
func (j jobStore) Heartbeat(ctx context.Context, l backend.Lease, lease time.Duration) error {
	s := j.s
	if lease < time.Millisecond {
		return errors.New("postgres: Heartbeat needs a lease of at least 1 ms")
	}
	tag, err := s.pool.Exec(ctx, s.q.heartbeat, s.now(), l.TaskID, l.Attempt, lease.Milliseconds())
	if err != nil {
		return wrapErr("heartbeat", err)
	}
	if tag.RowsAffected() == 0 {
		return backend.ErrLeaseLost
	}
	return nil
}

// RequestInput implements backend.JobStore. It fails with backend.ErrLeaseLost
// when the lease is not live, and with backend.ErrKeyReused (changing
// nothing, keeping the lease) when a key was requested before during the
// task's lifetime. Otherwise the requests replace any outstanding ones, the
// task turns input_required with message, and the job waits for the answers
// with its lease ended (or stays claimable when cancellation was requested,
// so that a worker sees the intent).
func (j jobStore) RequestInput(ctx context.Context, l backend.Lease, reqs mcp.InputRequests, message string) error {
	s := j.s
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := storerules.CheckRequests(reqs); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	reqJSON, err := taskdata.EncodeJSON(reqs)
	if err != nil {
		return wrapErr("encode input requests", err)
	}
	return s.inTx(ctx, func(tx pgx.Tx) ([]event, error) {
		now := s.now()
		err := tx.QueryRow(ctx, s.q.lockLease, now, l.TaskID, l.Attempt).Scan(nil)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, backend.ErrLeaseLost
		}
		if err != nil {
			return nil, wrapErr("request input", err)
		}
		var used []string
		var cancelRequested bool
		if err := tx.QueryRow(ctx, s.q.lockKeys, l.TaskID).Scan(&used, &cancelRequested); err != nil {
			return nil, wrapErr("request input", err)
		}
		keys := slices.Sorted(maps.Keys(reqs))
		for _, k := range keys {
			if slices.Contains(used, k) {
				return nil, fmt.Errorf("%w: %q", backend.ErrKeyReused, k)
			}
		}
		used = slices.Concat(used, keys)
		slices.Sort(used)
		ev, err := fencedEvent(ctx, tx, "request input", s.q.requestInput, now, l.TaskID, l.Attempt, message,
			reqJSON, used, cancelRequested)
		if err != nil {
			return nil, err
		}
		return []event{ev}, nil
	})
}

// Complete implements backend.JobStore.
func (j jobStore) Complete(ctx context.Context, l backend.Lease, res *mcp.CallToolResult, message string) error {
	s := j.s
	if res == nil {
		return errors.New("postgres: a result is required")
	}
	b, err := json.Marshal(res)
	if err != nil {
		return wrapErr("encode result", err)
	}
	return s.finish(ctx, s.now(), l, task.Completed, message, b, nil, "")
}

// Fail implements backend.JobStore. With a failure category to record, the
// statement and the category's update share a transaction.
func (j jobStore) Fail(ctx context.Context, l backend.Lease, rpcErr *mcp.Error, message string, c backend.FailureCategory) error {
	s := j.s
	if rpcErr == nil {
		return errors.New("postgres: an error is required")
	}
	b, err := json.Marshal(rpcErr)
	if err != nil {
		return wrapErr("encode error", err)
	}
	return s.finish(ctx, s.now(), l, task.Failed, message, nil, b, c)
}

// Cancel implements backend.JobStore.
func (j jobStore) Cancel(ctx context.Context, l backend.Lease, message string) error {
	s := j.s
	return s.finish(ctx, s.now(), l, task.Cancelled, message, nil, nil, "")
}

// CompleteBatch implements backend.BatchCompleter: every item is completed
// under its own fence, in one statement and one transaction. An item that
// repeats an earlier item's lease is lost, as it would be if the items were
// completed one by one: the job is done by then. Items that name one task
// with different attempts (at most one of which can be live) are sent in
// statements of their own, one after another. An item's checkpoint is set
// on its job by the same statement.
func (j jobStore) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	s := j.s
	n := len(items)
	lost := make([]bool, n)
	first := make(map[backend.Lease]bool, n) // the leases sent, each with its first item
	var todo []int                           // the items to send, in order
	bodies := make([][]byte, n)
	for i, it := range items {
		b, err := taskdata.CompletionJSON(it)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		bodies[i] = b
		if first[it.Lease] {
			lost[i] = true
			continue
		}
		first[it.Lease] = true
		todo = append(todo, i)
	}
	var evs []event
	for len(todo) > 0 {
		var round, later []int
		inRound := make(map[string]bool, len(todo))
		for _, i := range todo {
			if id := items[i].Lease.TaskID; inRound[id] {
				later = append(later, i)
			} else {
				inRound[id] = true
				round = append(round, i)
			}
		}
		done, err := s.completeBatch(ctx, items, bodies, round, &evs)
		if err != nil {
			return nil, err
		}
		for _, i := range round {
			lost[i] = !done[items[i].Lease]
		}
		todo = later
	}
	s.emit(evs...)
	return lost, nil
}

// completeBatch runs sqlCompleteBatch for the items at the positions in
// round, whose task IDs differ, with their stored results (bodies), appends
// the outbox events it recorded to evs, and returns the leases it
// completed.
func (s *Store) completeBatch(ctx context.Context, items []backend.Completion, bodies [][]byte, round []int,
	evs *[]event) (map[backend.Lease]bool, error) {
	n := len(round)
	ids, attempts, messages := make([]string, 0, n), make([]int64, 0, n), make([]string, 0, n)
	results, progress, totals := make([][]byte, 0, n), make([]*float64, 0, n), make([]*float64, 0, n)
	var checkpoints [][]byte // nil (NULL) unless an item saves one
	for k, i := range round {
		it := items[i]
		cur, total := progressArgs(it.Progress)
		ids, attempts, messages = append(ids, it.Lease.TaskID), append(attempts, it.Lease.Attempt), append(messages, it.Message)
		results, progress, totals = append(results, bodies[i]), append(progress, cur), append(totals, total)
		if it.Checkpoint != nil {
			if checkpoints == nil {
				checkpoints = make([][]byte, n)
			}
			checkpoints[k] = it.Checkpoint
		}
	}
	q, args := s.q.completeBatch, []any{s.now(), ids, attempts, messages, results, progress, totals, s.node, s.activitySlot()}
	if checkpoints != nil {
		q, args = s.q.completeBatchCheckpoints, append(args, checkpoints)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("complete batch", err)
	}
	var ev event
	var attempt int64
	done := make(map[backend.Lease]bool, n)
	if _, err := pgx.ForEachRow(rows, []any{&ev.id, &ev.taskID, &attempt}, func() error {
		*evs = append(*evs, ev)
		done[backend.Lease{TaskID: ev.taskID, Attempt: attempt}] = true
		return nil
	}); err != nil {
		return nil, wrapErr("complete batch", err)
	}
	return done, nil
}

// finish ends a task in a terminal status under a live lease, in one
// statement that also finishes the job and records the change, and records
// the failure category c (for a failed task) on its history.
func (s *Store) finish(ctx context.Context, now any, l backend.Lease, status task.Status, message string, result, errJSON []byte,
	c backend.FailureCategory) error {
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	ev, err := s.fencedFailure(ctx, "end task", s.q.finish, l, c, now, l.TaskID, l.Attempt, string(status), message,
		result, errJSON, s.node, s.activitySlot())
	if err != nil {
		return err
	}
	s.emit(ev)
	return nil
}

// activitySlots is the number of counter rows of one node and minute in
// task_activity: completing statements that run at once mostly add to
// different rows, so none waits for another's row lock until it commits.
const activitySlots = 4

// activitySlot is the task_activity slot of the next completing statement.
func (s *Store) activitySlot() int16 {
	return int16(s.completions.Add(1) % activitySlots)
}

// fencedEvent runs a fenced statement that returns the outbox row of its
// change, and fails with backend.ErrLeaseLost when the fence matched no row.
func fencedEvent(ctx context.Context, q queryRower, what, sql string, args ...any) (event, error) {
	var ev event
	err := q.QueryRow(ctx, sql, args...).Scan(&ev.id, &ev.taskID)
	if errors.Is(err, pgx.ErrNoRows) {
		return event{}, backend.ErrLeaseLost
	}
	if err != nil {
		return event{}, wrapErr(what, err)
	}
	return ev, nil
}

// fencedFailure runs a fenced statement as fencedEvent does, for the claim
// l, and records the failure category c, as
// backend.FailureCategory.Recorded bounds it, on the retry and failed
// events the statement's triggers recorded for l. The triggers run at the
// end of the statement, so the category is set by a second statement in
// the same transaction, and only once the fence matched: it never marks
// another claim's events. Without a category to record the statement runs
// alone, as fencedEvent.
func (s *Store) fencedFailure(ctx context.Context, what, sql string, l backend.Lease, c backend.FailureCategory,
	args ...any) (event, error) {
	if c = c.Recorded(); c == "" {
		return fencedEvent(ctx, s.pool, what, sql, args...)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return event{}, wrapErr(what, err)
	}
	defer tx.Rollback(ctx)
	ev, err := fencedEvent(ctx, tx, what, sql, args...)
	if err != nil {
		return event{}, err
	}
	if _, err := tx.Exec(ctx, s.q.recordCategory, l.TaskID, l.Attempt, string(c)); err != nil {
		return event{}, wrapErr(what+": record failure category", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return event{}, wrapErr(what+": commit", err)
	}
	return ev, nil
}

// Stored errors of tasks the store fails by itself.
var (
	// exhaustedJSON: the job used its attempts.
	exhaustedJSON = taskdata.ExhaustedJSON()
	// internalErrorJSON: the task's stored data is unreadable.
	internalErrorJSON = taskdata.InternalErrorJSON()
)

// Retry implements backend.JobStore. It counts a failure (noting the time
// of the job's first); when the failures reach the job's MaxAttempts and c
// is not backend.FailureUnavailable, the task fails with the client-safe
// error {"code":-32603,"message":"The task failed after repeated attempts."}
// instead, and the job is finished. Otherwise the job is available again at
// runAt (zero: now) and the task's status message becomes message. The
// failure category c is recorded on the retry event (and the failed one) in
// the statement's transaction.
func (j jobStore) Retry(ctx context.Context, l backend.Lease, runAt time.Time, message string, c backend.FailureCategory) error {
	s := j.s
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	var at any
	if !runAt.IsZero() {
		at = runAt.Truncate(time.Millisecond)
	}
	ev, err := s.fencedFailure(ctx, "retry", s.q.retry, l, c, s.now(), l.TaskID, l.Attempt, at, message, exhaustedJSON,
		c == backend.FailureUnavailable)
	if err != nil {
		return err
	}
	s.emit(ev)
	return nil
}

// Release implements backend.JobStore: the job is available again at once, in
// its place in the queue (its run_at is kept), and no failure is counted. The task does not change, so nothing is published.
func (j jobStore) Release(ctx context.Context, l backend.Lease) error {
	s := j.s
	tag, err := s.pool.Exec(ctx, s.q.release, s.now(), l.TaskID, l.Attempt)
	if err != nil {
		return wrapErr("release", err)
	}
	if tag.RowsAffected() == 0 {
		return backend.ErrLeaseLost
	}
	return nil
}

// CancelRequested implements backend.JobStore. It returns task.ErrNotFound for
// unknown and expired tasks.
func (j jobStore) CancelRequested(ctx context.Context, taskID string) (bool, error) {
	s := j.s
	var requested bool
	err := s.pool.QueryRow(ctx, s.q.cancelRequested, s.now(), taskID).Scan(&requested)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, task.ErrNotFound
	}
	if err != nil {
		return false, wrapErr("cancel requested", err)
	}
	return requested, nil
}
