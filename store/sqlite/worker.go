package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/logtext"
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

// fenceClause restricts a jobs statement to the live claim a lease names:
// the same attempt, still running, lease not expired. Its arguments are the
// task ID, the attempt and the current time in milliseconds.
const fenceClause = `task_id = ? AND attempt = ? AND state = 'running' AND lease_expires_at > ?`

// Claim implements backend.JobStore. It leases up to p.Limit due jobs of the
// queue p.Queue (backend.DefaultQueue when empty) and of the given kinds,
// highest priority first, then oldest run_at (then creation time, then
// task ID), in one transaction on the single writer. Claimable are available jobs, and
// jobs awaiting input whose task has a cancellation request. Jobs of
// expired tasks are skipped. A zero p.Now means the store's clock.
func (j jobStore) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	if p.Limit < 1 || p.Lease < time.Millisecond {
		return nil, errors.New("sqlite: Claim needs a positive Limit and a Lease of at least 1 ms")
	}
	got, err := j.claim(ctx, p, []backend.QueueClaim{{Queue: p.Queue, Kinds: p.Kinds, Limit: p.Limit}})
	if err != nil {
		return nil, err
	}
	return got[0], nil
}

// ClaimQueues implements backend.QueuesClaimer: the claims of qs, each as
// Claim makes it, in one transaction on the single writer, which runs the
// query of Claim once per queue (one range of jobs_claim_queue each, in
// the process: no round trip), so that it costs one write transaction
// whatever the number of queues.
func (j jobStore) ClaimQueues(ctx context.Context, p backend.ClaimParams, qs []backend.QueueClaim) ([][]backend.JobRow, error) {
	if err := backend.CheckQueueClaims(p, qs); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return j.claim(ctx, p, qs)
}

// claimQuery selects the claim's candidates of one queue: they come from
// jobs_claim_queue in index order (one queue, then priority, run_at,
// created_at, task_id), and the scan stops at the limit whatever the
// queue length. ?1 now (ms), ?2 kinds (JSON array, "[]" for every kind),
// ?3 limit, ?4 queue.
const claimQuery = `SELECT j.task_id, j.attempt, j.failures, j.interrupted_runs, j.input_rounds, j.first_failure_at,
			j.max_attempts, j.kind, t.origin,
			t.input_responses, t.cancel_requested, coalesce(t.trace_context, ''), j.checkpoint, t.progress, t.progress_total
		FROM jobs j INDEXED BY jobs_claim_queue JOIN tasks t ON t.id = j.task_id
		WHERE j.state = 'available' AND j.queue = ?4 AND j.run_at <= ?1 AND (j.expires_at IS NULL OR j.expires_at > ?1)
		AND (?2 = '[]' OR j.kind IN (SELECT value FROM json_each(?2)))
		ORDER BY j.priority, j.run_at, j.created_at, j.task_id LIMIT ?3`

// claim claims the jobs of each of qs in one write transaction, and
// returns them by queue.
func (j jobStore) claim(ctx context.Context, p backend.ClaimParams, qs []backend.QueueClaim) ([][]backend.JobRow, error) {
	s := j.s
	now := p.Now
	if now.IsZero() {
		now = s.now()
	}
	nowMs := now.UnixMilli()
	args := make([][]any, len(qs))
	for i, q := range qs {
		kinds := "[]"
		if len(q.Kinds) > 0 {
			b, err := json.Marshal(q.Kinds)
			if err != nil {
				return nil, wrapErr("claim", err)
			}
			kinds = string(b)
		}
		args[i] = []any{nowMs, kinds, q.Limit, cmp.Or(q.Queue, backend.DefaultQueue)}
	}
	c := claimWrite{worker: p.Worker, nowMs: nowMs, expMs: nowMs + p.Lease.Milliseconds()}
	if p.Instance != "" {
		c.instance = p.Instance // else NULL: none (migration 014)
	}
	var out [][]backend.JobRow
	err := s.write(ctx, func(tx *wtx) ([]string, error) {
		out = make([][]backend.JobRow, len(qs))
		var publish []string
		for i := range qs {
			jobs, failed, err := c.queue(ctx, s, tx, args[i])
			if err != nil {
				return nil, err
			}
			out[i] = jobs
			publish = append(publish, failed...)
		}
		return publish, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimWrite is what the claim writes on the jobs it takes.
type claimWrite struct {
	worker       string
	nowMs, expMs int64
	instance     any // the claiming instance, or nil
}

// queue claims the jobs claimQuery selects with args, in tx. It returns
// them, and the tasks it failed because their rows could not be read.
func (c claimWrite) queue(ctx context.Context, s *Store, tx *wtx, args []any) ([]backend.JobRow, []string, error) {
	rows, err := tx.QueryContext(ctx, claimQuery, args...)
	if err != nil {
		return nil, nil, wrapErr("claim", err)
	}
	var cands []claimCandidate
	for rows.Next() {
		cand, err := scanClaimCandidate(rows)
		if err != nil {
			rows.Close()
			return nil, nil, err
		}
		cands = append(cands, cand)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, wrapErr("claim", err)
	}
	jobs := make([]backend.JobRow, 0, len(cands))
	ids := make([]string, 0, len(cands))
	var failed []string
	for _, cand := range cands {
		j := cand.job
		j.Trace = task.DecodeTraceContext(cand.trace)
		if err := taskdata.DecodeClaim(&j, cand.origin, cand.responses); err != nil {
			// A row this code cannot read must not block the queue
			// forever: fail its task and go on.
			s.log.Error("sqlite: failing a task whose stored data is unreadable", "kind", j.Kind, "err", logtext.Error(err))
			if err := failUnreadable(ctx, tx, j.TaskID, c.nowMs); err != nil {
				return nil, nil, err
			}
			failed = append(failed, j.TaskID)
			continue
		}
		j.Attempt++
		j.LeaseExpires = time.UnixMilli(c.expMs).UTC()
		jobs = append(jobs, j)
		ids = append(ids, j.TaskID)
	}
	if len(ids) == 0 {
		return nil, failed, nil
	}
	// One statement for the claim's jobs, not one each (each statement
	// costs a VDBE run and a statement journal of its own). The writer
	// runs nothing else between the query and this UPDATE, so the rows
	// are as the query read them; the count checks it. The claim columns
	// name this claim for the history (migration 011); SET reads the row
	// as it was, so claimed_attempt is the new attempt.
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, nil, wrapErr("claim", err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'running', attempt = attempt + 1,
			lease_owner = ?, lease_expires_at = ?, claimed_by = ?, claimed_at = ?, claimed_attempt = attempt + 1,
			lease_instance = ?
			WHERE task_id IN (SELECT value FROM json_each(?)) AND state = 'available'`,
		c.worker, c.expMs, c.worker, c.nowMs, c.instance, string(idsJSON))
	if err != nil {
		return nil, nil, wrapErr("claim", err)
	}
	if n, _ := res.RowsAffected(); n != int64(len(ids)) {
		return nil, nil, errors.New("sqlite: claim: a job changed under the writer")
	}
	return jobs, failed, nil
}

// claimCandidate is one row of the claim's query.
type claimCandidate struct {
	job       backend.JobRow
	origin    []byte
	responses []byte
	trace     string
}

// scanClaimCandidate reads the current row of the claim's query.
func scanClaimCandidate(rows *sql.Rows) (claimCandidate, error) {
	var c claimCandidate
	var firstFailure sql.NullInt64
	var cur, total sql.NullFloat64
	if err := rows.Scan(&c.job.TaskID, &c.job.Attempt, &c.job.Failures, &c.job.InterruptedRuns, &c.job.InputRounds,
		&firstFailure, &c.job.MaxAttempts, &c.job.Kind, &c.origin, &c.responses, &c.job.CancelRequested, &c.trace,
		&c.job.Checkpoint, &cur, &total); err != nil {
		return c, wrapErr("claim", err)
	}
	if firstFailure.Valid {
		c.job.FirstFailure = time.UnixMilli(firstFailure.Int64).UTC()
	}
	if cur.Valid {
		c.job.Progress = &task.Progress{Current: cur.Float64, Total: total.Float64}
	}
	return c, nil
}

// failUnreadable fails a task whose row cannot be decoded, with the fixed
// internal error, and finishes its job.
func failUnreadable(ctx context.Context, tx *wtx, id string, nowMs int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'done', lease_owner = NULL, lease_expires_at = NULL
		WHERE task_id = ?`, id); err != nil {
		return wrapErr("fail unreadable task", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'failed', status_message = '', input_requests = NULL,
		result = NULL, error = ?, updated_at = max(updated_at, ?) WHERE id = ?`, string(taskdata.InternalErrorJSON()), nowMs, id); err != nil {
		return wrapErr("fail unreadable task", err)
	}
	return outbox(ctx, tx, id, nowMs)
}

// fencedJob runs a fenced UPDATE of the lease's job row (set is the SET
// list, setArgs its arguments) and returns backend.ErrLeaseLost when it
// matched no row.
func fencedJob(ctx context.Context, tx *wtx, l backend.Lease, nowMs int64, set string, setArgs ...any) error {
	args := append(setArgs, l.TaskID, l.Attempt, nowMs)
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET `+set+` WHERE `+fenceClause, args...)
	if err != nil {
		return wrapErr("update job", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrapErr("update job", err)
	}
	if n == 0 {
		return backend.ErrLeaseLost
	}
	return nil
}

// Heartbeat implements backend.JobStore: it extends a live lease to now+lease.
func (j jobStore) Heartbeat(ctx context.Context, l backend.Lease, lease time.Duration) error {
	s := j.s
	if lease < time.Millisecond {
		return errors.New("sqlite: Heartbeat needs a lease of at least 1 ms")
	}
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		return nil, fencedJob(ctx, tx, l, nowMs, `lease_expires_at = ?`, nowMs+lease.Milliseconds())
	})
}

// RequestInput implements backend.JobStore. It fails with backend.ErrLeaseLost
// when the lease is not live, and with backend.ErrKeyReused (changing
// nothing, keeping the lease) when a key was requested before during the
// task's lifetime. Otherwise the requests replace any outstanding ones, the
// task turns input_required with message, and the job waits for the answers
// with its lease ended.
func (j jobStore) RequestInput(ctx context.Context, l backend.Lease, reqs mcp.InputRequests, message string) error {
	s := j.s
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := storerules.CheckRequests(reqs); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	reqJSON, err := taskdata.EncodeJSON(reqs)
	if err != nil {
		return wrapErr("encode input requests", err)
	}
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		var usedJSON []byte
		var cancelRequested bool
		err := tx.QueryRowContext(ctx, `SELECT t.used_keys, t.cancel_requested FROM jobs j JOIN tasks t ON t.id = j.task_id
			WHERE j.task_id = ? AND j.attempt = ? AND j.state = 'running' AND j.lease_expires_at > ?`,
			l.TaskID, l.Attempt, nowMs).Scan(&usedJSON, &cancelRequested)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, backend.ErrLeaseLost
		}
		if err != nil {
			return nil, wrapErr("request input", err)
		}
		used, err := taskdata.DecodeKeys(usedJSON)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		keys := slices.Sorted(maps.Keys(reqs))
		for _, k := range keys {
			if used[k] {
				return nil, fmt.Errorf("%w: %q", backend.ErrKeyReused, k)
			}
		}
		for _, k := range keys {
			used[k] = true
		}
		newUsed, err := json.Marshal(slices.Sorted(maps.Keys(used)))
		if err != nil {
			return nil, wrapErr("encode used keys", err)
		}
		// A task whose client asked to cancel keeps its job claimable, so
		// that a worker sees the intent. The job keeps its run_at: once
		// answered, it is claimed in its original place in the queue.
		state := "awaiting_input"
		if cancelRequested {
			state = "available"
		}
		if err := fencedJob(ctx, tx, l, nowMs, `state = ?, lease_owner = NULL, lease_expires_at = NULL,
			input_rounds = input_rounds + 1`, state); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'input_required', status_message = ?,
			input_requests = ?, used_keys = ?, updated_at = max(updated_at, ?) WHERE id = ?`,
			message, string(reqJSON), string(newUsed), nowMs, l.TaskID); err != nil {
			return nil, wrapErr("request input", err)
		}
		if err := outbox(ctx, tx, l.TaskID, nowMs); err != nil {
			return nil, err
		}
		return []string{l.TaskID}, nil
	})
}

// Complete implements backend.JobStore: under a live lease (else
// backend.ErrLeaseLost) it ends the task completed with res and message,
// clears outstanding input requests, finishes the job and publishes the
// change. res must already be validated against the task's origin.
func (j jobStore) Complete(ctx context.Context, l backend.Lease, res *mcp.CallToolResult, message string) error {
	s := j.s
	if res == nil {
		return errors.New("sqlite: a result is required")
	}
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return wrapErr("encode result", err)
	}
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		var acc completions
		if err := completeJob(ctx, tx, l, string(b), message, nil, nil, nowMs, &acc); err != nil {
			return nil, err
		}
		return []string{l.TaskID}, acc.flush(ctx, tx, nowMs)
	})
}

// Fail implements backend.JobStore: under a live lease (else
// backend.ErrLeaseLost) it ends the task failed with the client-safe rpcErr
// and message, finishes the job, records the failure category c on the
// failed event and publishes the change.
func (j jobStore) Fail(ctx context.Context, l backend.Lease, rpcErr *mcp.Error, message string, c backend.FailureCategory) error {
	s := j.s
	if rpcErr == nil {
		return errors.New("sqlite: an error is required")
	}
	b, err := json.Marshal(rpcErr)
	if err != nil {
		return wrapErr("encode error", err)
	}
	return s.finish(ctx, l, task.Failed, message, nil, string(b), c)
}

// Cancel implements backend.JobStore: under a live lease (else
// backend.ErrLeaseLost) it ends the task cancelled with message, finishes the
// job and publishes the change.
func (j jobStore) Cancel(ctx context.Context, l backend.Lease, message string) error {
	s := j.s
	return s.finish(ctx, l, task.Cancelled, message, nil, nil, "")
}

// finish ends a task in a terminal status under a live lease, recording
// the failure category c (for a failed task) on its history.
func (s *Store) finish(ctx context.Context, l backend.Lease, status task.Status, message string, result, errJSON any,
	c backend.FailureCategory) error {
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		if err := fencedJob(ctx, tx, l, nowMs, `state = 'done', lease_owner = NULL, lease_expires_at = NULL`); err != nil {
			return nil, err
		}
		if err := setTerminal(ctx, tx, l.TaskID, status, message, result, errJSON, nowMs); err != nil {
			return nil, err
		}
		return []string{l.TaskID}, recordCategory(ctx, tx, l, c)
	})
}

// recordCategory sets the failure category c, as
// backend.FailureCategory.Recorded bounds it, on the retry and failed
// events that the triggers recorded for the claim l: it runs in the
// transaction that recorded them, after its fenced write succeeded, so it
// never marks another claim's events. "" records nothing.
func recordCategory(ctx context.Context, tx *wtx, l backend.Lease, c backend.FailureCategory) error {
	if c = c.Recorded(); c == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE task_events SET category = ?
		WHERE task_id = ? AND attempt = ? AND kind IN ('retry', 'failed')`, string(c), l.TaskID, l.Attempt)
	return wrapErr("record failure category", err)
}

// CompleteBatch implements backend.BatchCompleter: every item is completed
// under its own fence in one immediate transaction, so the batch costs one
// commit. Items whose lease is lost are skipped and reported. Every item is
// checked before anything is written: an invalid one fails the batch. An
// item's checkpoint is set by the UPDATE that finishes its job.
func (j jobStore) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	s := j.s
	results := make([]string, len(items))
	for i, it := range items {
		b, err := taskdata.CompletionJSON(it)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		results[i] = string(b)
	}
	lost := make([]bool, len(items))
	err := s.writeBatch(ctx, len(items), func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		var done []string
		var acc completions
		for i, it := range items {
			err := completeJob(ctx, tx, it.Lease, results[i], it.Message, it.Progress, it.Checkpoint, nowMs, &acc)
			if errors.Is(err, backend.ErrLeaseLost) {
				lost[i] = true
				continue
			}
			if err != nil {
				return nil, err
			}
			done = append(done, it.Lease.TaskID)
		}
		return done, acc.flush(ctx, tx, nowMs)
	})
	if err != nil {
		return nil, err
	}
	return lost, nil
}

// setTerminal moves a task to a terminal status and records the change in
// the outbox.
func setTerminal(ctx context.Context, tx *wtx, id string, status task.Status, message string, result, errJSON any, nowMs int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, status_message = ?, input_requests = NULL,
		result = ?, error = ?, updated_at = max(updated_at, ?) WHERE id = ?`,
		string(status), message, result, errJSON, nowMs, id); err != nil {
		return wrapErr("end task", err)
	}
	return outbox(ctx, tx, id, nowMs)
}

// exhaustedJSON is the stored error of a task whose job used its attempts.
var exhaustedJSON = string(taskdata.ExhaustedJSON())

// Retry implements backend.JobStore. It counts a failure (noting the time
// of the job's first); when the failures reach the job's MaxAttempts and c
// is not backend.FailureUnavailable, the task fails with the client-safe error
// {"code":-32603,"message":"The task failed after repeated attempts."}
// instead, and the job is finished. A zero runAt means now. The failure
// category c is recorded on the retry event (and the failed one).
func (j jobStore) Retry(ctx context.Context, l backend.Lease, runAt time.Time, message string, c backend.FailureCategory) error {
	s := j.s
	if err := storerules.CheckMessage(message); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		var failures, maxAttempts int
		err := tx.QueryRowContext(ctx, `SELECT failures, max_attempts FROM jobs WHERE `+fenceClause,
			l.TaskID, l.Attempt, nowMs).Scan(&failures, &maxAttempts)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, backend.ErrLeaseLost
		}
		if err != nil {
			return nil, wrapErr("retry", err)
		}
		if failures+1 >= maxAttempts && c != backend.FailureUnavailable {
			if err := fencedJob(ctx, tx, l, nowMs, `state = 'done', failures = failures + 1, lease_owner = NULL,
				lease_expires_at = NULL, first_failure_at = coalesce(first_failure_at, ?)`, nowMs); err != nil {
				return nil, err
			}
			if err := setTerminal(ctx, tx, l.TaskID, task.Failed, "", nil, exhaustedJSON, nowMs); err != nil {
				return nil, err
			}
			return []string{l.TaskID}, recordCategory(ctx, tx, l, c)
		}
		runAtMs := nowMs
		if !runAt.IsZero() {
			runAtMs = runAt.UnixMilli()
		}
		if err := fencedJob(ctx, tx, l, nowMs, `state = 'available', failures = failures + 1, run_at = ?,
			lease_owner = NULL, lease_expires_at = NULL, first_failure_at = coalesce(first_failure_at, ?)`,
			runAtMs, nowMs); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status_message = ?, updated_at = max(updated_at, ?)
			WHERE id = ?`, message, nowMs, l.TaskID); err != nil {
			return nil, wrapErr("retry", err)
		}
		if err := outbox(ctx, tx, l.TaskID, nowMs); err != nil {
			return nil, err
		}
		return []string{l.TaskID}, recordCategory(ctx, tx, l, c)
	})
}

// Release implements backend.JobStore: the job is available again at once, in
// its place in the queue (its run_at is kept), and no failure is counted.
// The task does not change, so nothing is published.
func (j jobStore) Release(ctx context.Context, l backend.Lease) error {
	s := j.s
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		nowMs := s.now().UnixMilli()
		return nil, fencedJob(ctx, tx, l, nowMs, `state = 'available', lease_owner = NULL, lease_expires_at = NULL`)
	})
}

// CancelRequested implements backend.JobStore. It returns task.ErrNotFound for
// unknown and expired tasks.
func (j jobStore) CancelRequested(ctx context.Context, taskID string) (bool, error) {
	s := j.s
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var yes bool
	err := s.rs.QueryRowContext(ctx, `SELECT cancel_requested FROM tasks
		WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`, taskID, s.now().UnixMilli()).Scan(&yes)
	if errors.Is(err, sql.ErrNoRows) {
		return false, task.ErrNotFound
	}
	if err != nil {
		return false, wrapErr("cancel requested", err)
	}
	return yes, nil
}
