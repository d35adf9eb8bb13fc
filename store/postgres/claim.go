package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/logtext"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

var _ backend.QueuesClaimer = jobStore{}

// Claim implements backend.JobStore. It leases up to p.Limit due available jobs
// of the queue p.Queue (backend.DefaultQueue when empty) and of the given
// kinds, highest priority first, then oldest run_at (then creation time,
// then task ID), in one statement that locks them with FOR UPDATE SKIP LOCKED, so
// concurrent claimers on any node never wait for each other or share a job.
// Jobs of expired tasks are skipped. A job whose task has stored data this
// code cannot read fails its task with the fixed internal error instead of
// being handed out. A zero p.Now means the store's clock.
func (j jobStore) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	s := j.s
	if p.Limit < 1 || p.Lease < time.Millisecond {
		return nil, errors.New("postgres: Claim needs a positive Limit and a Lease of at least 1 ms")
	}
	s.ensureClaimStats(ctx)
	now := s.at(p.Now)
	instance, err := instanceKey(p.Instance)
	if err != nil {
		return nil, err
	}
	query, args := s.q.claim, []any{now, p.Limit, p.Worker, p.Lease.Milliseconds(), cmp.Or(p.Queue, backend.DefaultQueue), instance}
	if len(p.Kinds) > 0 {
		query, args = s.q.claimKinds, append(args, p.Kinds)
	}
	got, err := s.claimed(ctx, now, 1, false, query, args)
	if err != nil {
		return nil, err
	}
	return got[0], nil
}

// ClaimQueues implements backend.QueuesClaimer: the claims of qs, each as
// Claim makes it, in one statement that walks one range of
// jobs_claim_queue per queue (a LATERAL subquery over the queues, each
// with its own LIMIT and FOR UPDATE SKIP LOCKED).
func (j jobStore) ClaimQueues(ctx context.Context, p backend.ClaimParams, qs []backend.QueueClaim) ([][]backend.JobRow, error) {
	s := j.s
	if err := backend.CheckQueueClaims(p, qs); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s.ensureClaimStats(ctx)
	now := s.at(p.Now)
	instance, err := instanceKey(p.Instance)
	if err != nil {
		return nil, err
	}
	names, limits, every := make([]string, len(qs)), make([]int32, len(qs)), make([]bool, len(qs))
	var kinds []string
	var kindQueue []int32
	for i, q := range qs {
		names[i], limits[i], every[i] = cmp.Or(q.Queue, backend.DefaultQueue), int32(q.Limit), len(q.Kinds) == 0
		for _, k := range q.Kinds {
			kinds, kindQueue = append(kinds, k), append(kindQueue, int32(i+1))
		}
	}
	args := []any{now, limits, p.Worker, p.Lease.Milliseconds(), names, instance, kinds, kindQueue, every}
	return s.claimed(ctx, now, len(qs), true, s.q.claimQueues, args)
}

// claimedRow is one row of a claim statement.
type claimedRow struct {
	job               backend.JobRow
	origin, responses []byte
	trace             string
	queue             int32 // 1-based index of the row's queue in a ClaimQueues call
}

// claimed runs a claim statement (queries.claim, claimKinds or, with
// withQueue, claimQueues, whose rows end with the index of their queue)
// and returns its jobs by queue, of n queues. A job whose stored data
// cannot be read fails its task instead.
func (s *Store) claimed(ctx context.Context, now any, n int, withQueue bool, query string, args []any) ([][]backend.JobRow, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, wrapErr("claim", err)
	}
	got, err := scanClaimed(rows, withQueue)
	if err != nil {
		return nil, err
	}
	out := make([][]backend.JobRow, n)
	if !withQueue {
		out[0] = make([]backend.JobRow, 0, len(got))
	}
	for _, c := range got {
		i := max(int(c.queue)-1, 0)
		if i >= n {
			return nil, fmt.Errorf("postgres: claim: a row of queue %d of %d", i+1, n)
		}
		j := c.job
		j.LeaseExpires = j.LeaseExpires.UTC()
		j.Trace = task.DecodeTraceContext(c.trace)
		if err := taskdata.DecodeClaim(&j, c.origin, c.responses); err != nil {
			// A row this code cannot read must not block the queue
			// forever: fail its task and go on.
			s.log.Error("postgres: failing a task whose stored data is unreadable", "kind", j.Kind, "err", logtext.Error(err))
			if err := s.finish(ctx, now, j.Lease, task.Failed, "", nil, internalErrorJSON, ""); err != nil &&
				!errors.Is(err, backend.ErrLeaseLost) {
				return nil, err
			}
			continue
		}
		out[i] = append(out[i], j)
	}
	return out, nil
}

// scanClaimed reads and closes the rows of a claim statement; withQueue:
// each row ends with its queue's index.
func scanClaimed(rows pgx.Rows, withQueue bool) ([]claimedRow, error) {
	defer rows.Close()
	var got []claimedRow
	for rows.Next() {
		var c claimedRow
		var firstFailure *time.Time
		var cur, total *float64
		dest := []any{&c.job.TaskID, &c.job.Attempt, &c.job.Failures, &c.job.InterruptedRuns, &c.job.InputRounds,
			&c.job.MaxAttempts, &c.job.LeaseExpires, &firstFailure, &c.job.Kind, &c.origin, &c.responses,
			&c.job.CancelRequested, &c.trace, &c.job.Checkpoint, &cur, &total}
		if withQueue {
			dest = append(dest, &c.queue)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, wrapErr("claim", err)
		}
		if firstFailure != nil {
			c.job.FirstFailure = firstFailure.UTC()
		}
		if cur != nil {
			c.job.Progress = &task.Progress{Current: *cur}
			if total != nil {
				c.job.Progress.Total = *total
			}
		}
		got = append(got, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrapErr("claim", err)
	}
	return got, nil
}
