package postgres

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Statement templates. {{schema}} is the quoted schema and {{now}} the
// statement's time, always parameter $1: the injected clock's time, or the
// database's clock in whole milliseconds when $1 is NULL. Statements that
// record an observable change end with recordEvents: they insert one outbox
// row per changed task (a CTE named t yields the task IDs) and return the
// rows' IDs and task IDs, which the store publishes after commit.
//
// Row locks, under READ COMMITTED. Writers of a claimed (running) job lock
// its job row, then its task row: fenced writes, RescueExpired, and
// RequestInput, which locks both in separate statements before reading the
// task. Client calls (UpdateTask, RequestCancel) lock the task row first and
// then touch the job only when it is not running, so they never wait for a
// job row a fenced writer holds. Deletions lock the job row first
// (idempotency) or skip locked rows (DeleteExpired). Where a decision
// depends on a row another transaction may change, the row is locked by a
// statement of its own, so that later statements of the transaction see the
// latest committed state.

// fence restricts a jobs statement to the live claim a lease names: the
// same attempt, still running, lease not expired. Its parameters are $2 (task
// ID) and $3 (attempt).
const fence = `task_id = $2 AND attempt = $3 AND state = 'running' AND lease_expires_at > {{now}}`

// live restricts a tasks statement to unexpired tasks.
const live = `(expires_at IS NULL OR expires_at > {{now}})`

// boundTask finds one task by its primary key, $2, and checks that the
// request's endpoint ($3) and tenant ($4) are the task's binding. The
// binding is compared with IS NOT DISTINCT FROM (the same as = for these
// NOT NULL columns and non-NULL parameters) because no index can serve that
// comparison: with =, the planner may pick tasks_list (endpoint, tenant,
// created_at, id) whenever it believes a tenant to be small, as it does
// before a table's first ANALYZE, and then reads every index entry of the
// tenant to find one task (TestFindTaskPlan).
const boundTask = `id = $2 AND (endpoint, tenant) IS NOT DISTINCT FROM ($3::text, $4::text)`

// recordEvents ends a statement whose CTE t returns the changed tasks' IDs:
// one outbox row each, returned as (outbox ID, task ID).
const recordEvents = `INSERT INTO {{schema}}.outbox (task_id, created_at) SELECT id, {{now}} FROM t
		RETURNING id, task_id`

// countCompleted and addCompleted surround the FROM clause of a CTE that
// adds the tasks it counts, completed at {{now}}, to the chart's counters
// (task_activity, migration 013): $8 names the node, $9 its slot.
const (
	countCompleted = `INSERT INTO {{schema}}.task_activity (minute, node, slot, completed)
			SELECT date_trunc('minute', {{now}}), $8::text, $9::smallint, count(*)`
	addCompleted = `ON CONFLICT (minute, node, slot) DO UPDATE SET completed = task_activity.completed + excluded.completed`
)

// taskColumns are the columns scanned into a taskRow, in order.
const taskColumns = `id, status, status_message, origin, created_at, updated_at, ttl_ms, poll_interval_ms,
	input_requests, result, error, progress, progress_total`

const (
	sqlFindTask = `SELECT ` + taskColumns + ` FROM {{schema}}.tasks
		WHERE ` + boundTask + ` AND ` + live

	sqlLockForUpdate = `SELECT status, input_requests, input_responses FROM {{schema}}.tasks
		WHERE ` + boundTask + ` AND ` + live + ` FOR UPDATE`

	// $2 task, $3 status, $4 outstanding requests, $5 accepted responses,
	// $6 whether the job waiting for them wakes. The job keeps its run_at
	// (in the past), so it is claimed in its original place in the queue.
	// A job that is available while its task has outstanding requests was
	// woken by a cancellation request, and stays so.
	sqlAcceptResponses = `WITH j AS (
			UPDATE {{schema}}.jobs SET state = 'available'
			WHERE task_id = $2 AND state IN ('awaiting_input', 'available') AND $6::boolean),
		t AS (
			UPDATE {{schema}}.tasks SET status = $3, input_requests = $4, input_responses = $5,
				status_message = CASE WHEN $6::boolean THEN '' ELSE status_message END,
				updated_at = GREATEST(updated_at, {{now}})
			WHERE id = $2 RETURNING id)
		` + recordEvents

	sqlLockForCancel = `SELECT status, cancel_requested FROM {{schema}}.tasks
		WHERE ` + boundTask + ` AND ` + live + ` FOR UPDATE`

	// $2 task. A job awaiting input becomes available, keeping
	// its run-at time, so that a worker sees the intent.
	sqlRequestCancel = `WITH j AS (
			UPDATE {{schema}}.jobs SET state = 'available' WHERE task_id = $2 AND state = 'awaiting_input'),
		t AS (UPDATE {{schema}}.tasks SET cancel_requested = true WHERE id = $2 RETURNING id)
		` + recordEvents

	sqlCancelRequested = `SELECT cancel_requested FROM {{schema}}.tasks WHERE id = $2 AND ` + live

	sqlIdempotencyHolder = `SELECT NOT ` + live + `, ` + taskColumns + ` FROM {{schema}}.tasks
		WHERE tenant = $2 AND endpoint = $3 AND kind = $4 AND idempotency_key = $5`

	// Deletes an expired idempotency key holder, locking its job first.
	sqlDeleteHolder = `DELETE FROM {{schema}}.tasks WHERE id = $1 AND id IN (
		SELECT task_id FROM {{schema}}.jobs WHERE task_id = $1 FOR UPDATE)`

	// $2 id, $3 endpoint, $4 tenant, $5 principal, $6 kind, $7 origin,
	// $8 TTL ms (0: unlimited), $9 poll interval ms, $10 idempotency key,
	// $11 max attempts, $12 run at (NULL: now), $13 trace context (NULL:
	// none), $14 queue, $15 priority. Returns the creation time, or no row when the idempotency key
	// is taken. The job repeats the task's kind and expiry for the claim
	// index. A creation writes no outbox row: its hint (after commit) only
	// wakes workers, which poll anyway, so a listener that missed it in an
	// outage needs no replay of it; every change after creation has its row.
	sqlEnqueue = `WITH n AS (SELECT {{now}} AS now),
		t AS (
			INSERT INTO {{schema}}.tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
				updated_at, expires_at, ttl_ms, poll_interval_ms, idempotency_key, trace_context, queue, priority)
			SELECT $2::text, $3::text, $4::text, $5::text, $6::text, 'working', $7::bytea, n.now, n.now,
				CASE WHEN $8::bigint > 0 THEN n.now + $8::bigint * interval '1 millisecond' END,
				$8::bigint, $9::bigint, $10::text, $13::text, $14::text, $15::smallint
			FROM n
			ON CONFLICT (tenant, endpoint, kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
			RETURNING id, kind, created_at, expires_at, queue, priority),
		j AS (
			INSERT INTO {{schema}}.jobs (task_id, state, max_attempts, run_at, created_at, kind, expires_at, queue, priority)
			SELECT id, 'available', $11::integer, coalesce($12::timestamptz, created_at), created_at, kind, expires_at,
				queue, priority
			FROM t)
		SELECT created_at FROM t`

	// Inserts a batch of tasks: $2 IDs, $3 endpoints, $4 tenants, $5
	// principals, $6 kinds, $7 origins, $8 TTLs ms (0: unlimited), $9 poll
	// intervals ms, $10 max attempts, $11 run-at times (NULL: now), $12
	// trace contexts (NULL: none), $13 queues, $14 priorities. The
	// job rows come from the batch itself, not from the tasks' RETURNING,
	// so that the cached plan never joins the batch with itself. Returns
	// the creation time; like sqlEnqueue, it writes no outbox row.
	sqlEnqueueBatch = `WITH n AS (SELECT {{now}} AS now),
		v AS (SELECT v.*, CASE WHEN v.ttl_ms > 0 THEN n.now + v.ttl_ms * interval '1 millisecond' END AS expires_at
			FROM n, unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::bigint[],
				$9::bigint[], $10::integer[], $11::timestamptz[], $12::text[], $13::text[], $14::smallint[])
				AS v(id, endpoint, tenant, principal, kind, origin, ttl_ms, poll_ms, max_attempts, run_at, trace,
					queue, priority)),
		t AS (
			INSERT INTO {{schema}}.tasks (id, endpoint, tenant, principal, kind, status, origin, created_at,
				updated_at, expires_at, ttl_ms, poll_interval_ms, trace_context, queue, priority)
			SELECT v.id, v.endpoint, v.tenant, v.principal, v.kind, 'working', v.origin, n.now, n.now,
				v.expires_at, v.ttl_ms, v.poll_ms, v.trace, v.queue, v.priority
			FROM v, n),
		j AS (
			INSERT INTO {{schema}}.jobs (task_id, state, max_attempts, run_at, created_at, kind, expires_at, queue, priority)
			SELECT v.id, 'available', v.max_attempts, coalesce(v.run_at, n.now), n.now, v.kind, v.expires_at,
				v.queue, v.priority
			FROM v, n)
		SELECT now FROM n`

	// claimTake is the rest of a claim after its candidates (CTE c, their
	// task_id): it leases the candidate jobs ($3 worker, $4 lease ms, $6
	// claiming instance) and selects the columns of a claimed job, from
	// the claimed jobs (u) and their tasks (t), which the statement joins.
	claimTake = `u AS (
			UPDATE {{schema}}.jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = $3,
				lease_expires_at = {{now}} + $4::bigint * interval '1 millisecond',
				claimed_at = {{now}}, claimed_by = $3, claimed_attempt = j.attempt + 1, lease_instance = $6::bigint
			WHERE j.task_id = ANY(ARRAY(SELECT task_id FROM c))
			RETURNING j.task_id, j.attempt, j.failures, j.interrupted_runs, j.input_rounds, j.max_attempts,
				j.lease_expires_at, j.priority, j.run_at, j.created_at, j.first_failure_at, j.checkpoint)
		SELECT u.task_id, u.attempt, u.failures, u.interrupted_runs, u.input_rounds, u.max_attempts, u.lease_expires_at,
			u.first_failure_at, t.kind,
			t.origin, t.input_responses, t.cancel_requested, coalesce(t.trace_context, ''), u.checkpoint,
			t.progress, t.progress_total`

	// $2 limit, $3 worker, $4 lease ms, $5 queue, $6 claiming instance
	// (NULL: none, migration 017); $7 kinds in the filtered variant. The
	// candidates come from the jobs table alone, in jobs_claim_queue index
	// order (one queue, then priority, run_at, created_at, task_id), so a
	// claim costs O(limit) whatever the queue length; the job
	// and task rows are then found by primary key ("= ANY(ARRAY(...))"
	// keeps the planner from hashing a whole table when its estimates of
	// the candidates are off).
	sqlClaim = `WITH c AS (
			SELECT task_id FROM {{schema}}.jobs
			WHERE state = 'available' AND queue = $5::text AND run_at <= {{now}}
				AND (expires_at IS NULL OR expires_at > {{now}}) {{kinds}}
			ORDER BY priority, run_at, created_at, task_id
			LIMIT $2 FOR UPDATE SKIP LOCKED),
		` + claimTake + `
		FROM u JOIN {{schema}}.tasks t ON t.id = u.task_id
		WHERE t.id = ANY(ARRAY(SELECT task_id FROM u))
		ORDER BY u.priority, u.run_at, u.created_at, u.task_id`

	// The claim of several queues (backend.QueuesClaimer): $2 the limits
	// and $5 the names of the queues, $9 whether each takes every kind,
	// $7 the kinds and $8 the (1-based) queue of each; $1, $3, $4 and $6
	// as in sqlClaim. Each queue's candidates come from a LATERAL
	// subquery that is sqlClaim's for that queue: one range of
	// jobs_claim_queue that stops at the queue's own limit. The kinds of
	// a queue are an InitPlan of its subquery. The rows end with their
	// queue's index.
	sqlClaimQueues = `WITH q AS (
			SELECT * FROM unnest($5::text[], $2::integer[], $9::boolean[]) WITH ORDINALITY AS q(name, lim, every, ord)),
		c AS (
			SELECT x.task_id, q.ord FROM q CROSS JOIN LATERAL (
				SELECT task_id FROM {{schema}}.jobs
				WHERE state = 'available' AND queue = q.name AND run_at <= {{now}}
					AND (expires_at IS NULL OR expires_at > {{now}})
					AND (q.every OR kind = ANY(ARRAY(
						SELECT k.kind FROM unnest($7::text[], $8::integer[]) AS k(kind, ord) WHERE k.ord = q.ord)))
				ORDER BY priority, run_at, created_at, task_id
				LIMIT q.lim FOR UPDATE SKIP LOCKED) x),
		` + claimTake + `, c.ord::integer
		FROM u JOIN c ON c.task_id = u.task_id JOIN {{schema}}.tasks t ON t.id = u.task_id
		WHERE t.id = ANY(ARRAY(SELECT task_id FROM u))
		ORDER BY c.ord, u.priority, u.run_at, u.created_at, u.task_id`

	// $4 lease ms.
	sqlHeartbeat = `UPDATE {{schema}}.jobs SET lease_expires_at = {{now}} + $4::bigint * interval '1 millisecond'
		WHERE ` + fence

	// $4 status, $5 message, $6 result, $7 error; $8 node and $9 slot of
	// the completion count.
	sqlFinish = `WITH j AS (
			UPDATE {{schema}}.jobs SET state = 'done', lease_owner = NULL, lease_expires_at = NULL
			WHERE ` + fence + ` RETURNING task_id),
		t AS (
			UPDATE {{schema}}.tasks t SET status = $4, status_message = $5, input_requests = NULL, result = $6,
				error = $7, updated_at = GREATEST(t.updated_at, {{now}})
			FROM j WHERE t.id = j.task_id RETURNING t.id),
		a AS (` + countCompleted + ` FROM t WHERE $4 = 'completed' HAVING count(*) > 0 ` + addCompleted + `)
		` + recordEvents

	// Completes many fenced jobs: $2 task IDs, $3 attempts, $4 messages,
	// $5 results, $6 progress counts and $7 totals (NULL: keep the
	// task's count); no task may appear twice. Returns, for each task
	// completed, the outbox row naming the tasks completed, the task ID
	// and the attempt that completed it (no row when none was). The jobs
	// are found by primary key from the batch's IDs (= ANY), and each
	// row's item by its position in the batch (array_position), never by
	// joining the batch with a table: the planner cannot estimate how
	// many rows a lease's fence matches (done jobs, whose lease is NULL,
	// dominate the statistics), and a join it sized at one row ran as a
	// nested loop over the whole batch for every job. $8 and $9 are the
	// node and slot of the completion count (countCompleted). In the
	// statement of a batch whose items carry checkpoints
	// (completeBatchCheckpoints), $10 are the checkpoints saved with the
	// completions (backend.Completion.Checkpoint; a NULL element keeps the
	// job's); a batch without any runs the statement without them, so
	// that completing costs what it did before checkpoints.
	sqlCompleteBatch = `WITH j AS (
			UPDATE {{schema}}.jobs j SET state = 'done', lease_owner = NULL, lease_expires_at = NULL{{checkpoints}}
			WHERE j.task_id = ANY($2::text[]) AND j.lease_expires_at > {{now}}
				AND j.attempt = ($3::bigint[])[array_position($2::text[], j.task_id)]
			RETURNING j.task_id, j.attempt, array_position($2::text[], j.task_id) AS i),
		t AS (
			UPDATE {{schema}}.tasks t SET status = 'completed', status_message = ($4::text[])[j.i], input_requests = NULL,
				result = ($5::bytea[])[j.i], error = NULL, updated_at = GREATEST(t.updated_at, {{now}}),
				progress = coalesce(($6::float8[])[j.i], t.progress),
				progress_total = CASE WHEN ($6::float8[])[j.i] IS NULL THEN t.progress_total ELSE ($7::float8[])[j.i] END
			FROM j WHERE t.id = j.task_id
			RETURNING t.id, j.attempt),
		o AS (
			INSERT INTO {{schema}}.outbox (task_id, task_ids, created_at)
			SELECT '', array_agg(id), {{now}} FROM t HAVING count(*) > 0
			RETURNING id),
		a AS (` + countCompleted + ` FROM t HAVING count(*) > 0 ` + addCompleted + `)
		SELECT o.id, t.id, t.attempt FROM o, t`

	// completeCheckpoints sets the checkpoints of sqlCompleteBatch's jobs
	// from $10, each where its item carries one.
	completeCheckpoints = `,
				checkpoint = coalesce(($10::bytea[])[array_position($2::text[], j.task_id)], j.checkpoint),
				checkpoint_at = CASE WHEN ($10::bytea[])[array_position($2::text[], j.task_id)] IS NULL
					THEN j.checkpoint_at ELSE {{now}} END`

	// $4 run at (NULL: now), $5 message, $6 exhausted error, $7 whether
	// the failure is exempt from max_attempts (backend.FailureUnavailable).
	// The failure that reaches max_attempts fails the task instead, unless
	// it is exempt. The first failure notes its time.
	sqlRetry = `WITH j AS (
			UPDATE {{schema}}.jobs SET failures = failures + 1,
				state = CASE WHEN failures + 1 >= max_attempts AND NOT $7::boolean THEN 'done' ELSE 'available' END,
				run_at = CASE WHEN failures + 1 >= max_attempts AND NOT $7::boolean THEN run_at
					ELSE coalesce($4::timestamptz, {{now}}) END,
				first_failure_at = coalesce(first_failure_at, {{now}}),
				lease_owner = NULL, lease_expires_at = NULL
			WHERE ` + fence + ` RETURNING task_id, state = 'done' AS exhausted),
		t AS (
			UPDATE {{schema}}.tasks t SET
				status = CASE WHEN j.exhausted THEN 'failed' ELSE t.status END,
				status_message = CASE WHEN j.exhausted THEN '' ELSE $5 END,
				input_requests = CASE WHEN j.exhausted THEN NULL ELSE t.input_requests END,
				error = CASE WHEN j.exhausted THEN $6::bytea END,
				updated_at = GREATEST(t.updated_at, {{now}})
			FROM j WHERE t.id = j.task_id RETURNING t.id)
		` + recordEvents

	// Records the failure category $3 on the retry and failed events the
	// triggers recorded for the claim ($1 task, $2 attempt), in the
	// transaction of its fenced write (migration 010).
	sqlRecordCategory = `UPDATE {{schema}}.task_events SET category = $3
		WHERE task_id = $1 AND attempt = $2 AND kind IN ('retry', 'failed')`

	// The job keeps its run_at, and its place in the queue.
	sqlRelease = `UPDATE {{schema}}.jobs SET state = 'available', lease_owner = NULL, lease_expires_at = NULL
		WHERE ` + fence

	sqlLockLease = `SELECT 1 FROM {{schema}}.jobs WHERE ` + fence + ` FOR UPDATE`

	sqlLockKeys = `SELECT used_keys, cancel_requested FROM {{schema}}.tasks WHERE id = $1 FOR UPDATE`

	// $4 message, $5 requests, $6 used keys, $7 whether cancellation was
	// requested (then the job stays claimable). The job keeps its run_at:
	// once answered, it is claimed in its original place in the queue.
	sqlRequestInput = `WITH j AS (
			UPDATE {{schema}}.jobs SET state = CASE WHEN $7::boolean THEN 'available' ELSE 'awaiting_input' END,
				lease_owner = NULL, lease_expires_at = NULL, input_rounds = input_rounds + 1
			WHERE ` + fence + ` RETURNING task_id),
		t AS (
			UPDATE {{schema}}.tasks t SET status = 'input_required', status_message = $4, input_requests = $5,
				used_keys = $6, updated_at = GREATEST(t.updated_at, {{now}})
			FROM j WHERE t.id = j.task_id RETURNING t.id)
		` + recordEvents

	// $2 limit, $3 exhausted error, $4 max interrupted runs, $5 the
	// message of a task that will run again (backend.InterruptedMessage);
	// {{candidates}} selects, locks and orders the jobs taken. Counts an
	// interrupted run, not a failure; run_at is kept, so a rescued job is
	// claimed before the jobs queued after it. Returns the number of jobs
	// rescued, and the outbox rows of the tasks changed: those failed, and
	// those whose message changed.
	sqlRescue = `WITH c AS ({{candidates}}),
		j AS (
			UPDATE {{schema}}.jobs SET interrupted_runs = jobs.interrupted_runs + 1,
				state = CASE WHEN jobs.interrupted_runs + 1 >= $4::integer THEN 'done' ELSE 'available' END,
				lease_owner = NULL, lease_expires_at = NULL
			FROM c WHERE jobs.task_id = c.task_id
			RETURNING jobs.task_id, jobs.state = 'done' AS exhausted),
		t AS (
			UPDATE {{schema}}.tasks SET status = CASE WHEN j.exhausted THEN 'failed' ELSE tasks.status END,
				status_message = CASE WHEN j.exhausted THEN '' ELSE $5::text END,
				input_requests = CASE WHEN j.exhausted THEN NULL ELSE tasks.input_requests END,
				result = CASE WHEN j.exhausted THEN NULL ELSE tasks.result END,
				error = CASE WHEN j.exhausted THEN $3 ELSE tasks.error END,
				updated_at = GREATEST(tasks.updated_at, {{now}})
			FROM j WHERE tasks.id = j.task_id AND (j.exhausted OR tasks.status_message IS DISTINCT FROM $5::text)
			RETURNING tasks.id),
		o AS (` + recordEvents + `)
		SELECT (SELECT count(*) FROM j), ARRAY(SELECT id FROM o), ARRAY(SELECT task_id FROM o)`

	// The jobs of RescueExpired: leases expired at $1.
	rescueExpired = `SELECT task_id FROM {{schema}}.jobs WHERE state = 'running' AND lease_expires_at <= {{now}}
			ORDER BY lease_expires_at, task_id LIMIT $2 FOR UPDATE SKIP LOCKED`

	// instanceUnheld is true for a job row j whose claiming instance's
	// advisory lock (keys: the high and low 31-bit halves of
	// lease_instance) no session of this database holds.
	instanceUnheld = `NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l
			WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
				AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
				AND l.classid = (j.lease_instance >> 31)::oid AND l.objid = (j.lease_instance & 2147483647)::oid)`

	// The jobs of InstanceHold.RescueDead: running jobs of the instances
	// $6 whose locks are not held.
	rescueDead = `SELECT task_id FROM {{schema}}.jobs j
			WHERE state = 'running' AND lease_instance = ANY($6::bigint[]) AND ` + instanceUnheld + `
			ORDER BY lease_expires_at, task_id LIMIT $2 FOR UPDATE SKIP LOCKED`

	// The instances, other than $1, of running jobs whose locks are not
	// held: those RescueDead suspects dead.
	sqlUnheldInstances = `SELECT DISTINCT lease_instance FROM {{schema}}.jobs j
		WHERE state = 'running' AND lease_instance IS NOT NULL AND lease_instance <> $1 AND ` + instanceUnheld

	// Locks the task and its job without waiting: a fenced write that
	// holds the job (and waits for the task) goes first. Tasks whose job
	// was pruned (PruneJobs) have no job to lock: no fenced write can hold
	// it.
	sqlDeleteExpired = `WITH
		with_job AS (SELECT t.id, t.expires_at FROM {{schema}}.tasks t JOIN {{schema}}.jobs j ON j.task_id = t.id
			WHERE t.expires_at IS NOT NULL AND t.expires_at <= {{now}}
			ORDER BY t.expires_at, t.id LIMIT $2 FOR UPDATE SKIP LOCKED),
		without_job AS (SELECT t.id, t.expires_at FROM {{schema}}.tasks t
			WHERE t.expires_at IS NOT NULL AND t.expires_at <= {{now}}
				AND NOT EXISTS (SELECT 1 FROM {{schema}}.jobs j WHERE j.task_id = t.id)
			ORDER BY t.expires_at, t.id LIMIT $2 FOR UPDATE SKIP LOCKED)
		DELETE FROM {{schema}}.tasks WHERE id IN (
			SELECT id FROM (SELECT * FROM with_job UNION ALL SELECT * FROM without_job) e
			ORDER BY expires_at, id LIMIT $2)`

	// Deletes up to $2 done jobs of tasks last updated before $1, skipping
	// locked rows, and writes the history steps they hold as rows: the
	// current claim, and the completion of a completed task that has no
	// completed row (one of an older version). Returns how many it deleted.
	sqlPruneJobs = `WITH d AS (
			DELETE FROM {{schema}}.jobs WHERE task_id IN (
				SELECT j.task_id FROM {{schema}}.jobs j JOIN {{schema}}.tasks t ON t.id = j.task_id
				WHERE j.state = 'done' AND t.updated_at < $1 LIMIT $2 FOR UPDATE OF j SKIP LOCKED)
			RETURNING task_id, attempt, claimed_attempt, claimed_by, claimed_at),
		c AS (
			INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, worker)
			SELECT task_id, claimed_at, 'claimed', attempt, claimed_by FROM d
			WHERE claimed_attempt = attempt AND claimed_at IS NOT NULL),
		e AS (
			INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, message)
			SELECT t.id, t.updated_at, 'completed', d.attempt, t.status_message
			FROM d JOIN {{schema}}.tasks t ON t.id = d.task_id
			WHERE t.status = 'completed' AND NOT EXISTS (
				SELECT 1 FROM {{schema}}.task_events e WHERE e.task_id = t.id AND e.kind = 'completed'))
		SELECT count(*) FROM d`

	// Deletes the chart's counter rows older than its window ($1 the
	// window's start).
	sqlPruneActivity = `DELETE FROM {{schema}}.task_activity WHERE minute < $1`

	// Walks the outbox in ID order (its primary key; IDs follow creation
	// closely) and deletes, of the first $2 rows, those created before $1.
	sqlPruneOutbox = `WITH head AS (SELECT id, created_at FROM {{schema}}.outbox ORDER BY id LIMIT $2)
		DELETE FROM {{schema}}.outbox WHERE id IN (SELECT id FROM head WHERE created_at < $1)`

	sqlOutboxAfter = `SELECT id, task_id, coalesce(task_ids, '{}') FROM {{schema}}.outbox WHERE id > $1 ORDER BY id LIMIT $2`

	sqlOutboxLast = `SELECT coalesce(max(id), 0) FROM {{schema}}.outbox`

	// $2 endpoint, $3 tenant, $4 position's created_at, $5 position's ID,
	// $6 limit. tasks_list (endpoint, tenant, created_at, id), scanned
	// backwards from the row comparison, yields the page in listing order
	// without a sort and never visits another endpoint's or tenant's rows;
	// the caller's own expired rows are read and skipped.
	sqlListTasks = `SELECT ` + taskColumns + ` FROM {{schema}}.tasks
		WHERE endpoint = $2 AND tenant = $3 AND ` + live + ` AND (created_at, id) < ($4::timestamptz, $5::text)
		ORDER BY created_at DESC, id DESC LIMIT $6`

	sqlCursorKey = `SELECT value FROM {{schema}}.secrets WHERE name = 'list_cursor'`
)

// Sessions (migration 005). Times are Unix milliseconds passed by the
// caller (the server's clock), not {{now}}; a session is live while
// $now < ends_at.
//
// The per-owner limit of Create must hold under concurrency: N nodes
// creating sessions for one owner at once must never leave more than the
// limit live. Counting and inserting in one READ COMMITTED transaction is
// not enough (two transactions both count limit-1 and both insert), so
// Create first takes a transaction-scoped advisory lock on a 64-bit hash of
// the schema and the owner (sqlLockOwner), then counts and inserts in a
// statement of its own, whose snapshot is taken after the lock, so it sees
// every session committed by the creates it waited for. Chosen over:
//   - a counting row per owner (UPDATE ... SET n = n + 1): sessions end by
//     time, not by a write, so the count drifts until a sweep and would
//     need recounting anyway; and the rows add churn and bloat per owner;
//   - SERIALIZABLE: correct, but concurrent creates of one owner abort
//     with serialization failures that every caller must retry.
//
// The lock is held only for two short statements and the commit, is
// released on commit, rollback or a lost connection, and serializes only
// creates of the same owner (or, rarely, of owners whose hashes collide,
// which only makes them wait for each other). The hash is computed in Go
// (ownerLockKey) so that it does not depend on the server's hash function.
//
// The store-wide limit (session.Limits.Total) must hold the same way, so a
// Create under it first takes one advisory lock for the whole schema
// (storeLockKey), before the owner's (always in that order: no deadlock),
// then counts the live sessions in a statement of its own, again after the
// lock. This serializes every create of the schema fleet-wide, for the
// length of two counts, the insert and the commit; the count stops at the
// limit and reads sessions_ends only, so it costs at most Total index
// entries (measured about 0.3 µs per live session, BenchmarkSessions/
// CreateWithTotal): creates are initialize calls only, not requests, but
// near a large Total the fleet's create rate is bounded by it. Chosen over:
//   - a counter row (n = n + 1 WHERE n < Total): exact only if every
//     removal decrements it, but sessions end by time and leave the count
//     until a sweep; it would have to count expired rows (bounding storage,
//     not live sessions) and needs a migration;
//   - counting without the lock: N nodes at Total-1 would all insert, so
//     the bound would grow with the fleet.
const (
	sessionColumns = `key, endpoint, tenant, principal, protocol_version, client_capabilities, client_info,
		log_level, created_at, last_used_at, expires_at, idle_timeout_ms`

	// $1 lock key.
	sqlLockOwner = `SELECT pg_advisory_xact_lock($1::bigint)`

	// Counts at most $2 live sessions of the schema at $1, reading
	// sessions_ends only.
	sqlCountLiveSessions = `SELECT count(*) FROM (SELECT 1 FROM {{schema}}.sessions
		WHERE ends_at > $1::bigint LIMIT $2::integer) c`

	// $1..$12 the record's columns, $13 ends_at, $14 now, $15 the limit
	// (0: none). Inserts nothing when the owner has $15 live sessions;
	// the count stops at the limit, reading sessions_owner only.
	sqlCreateSession = `INSERT INTO {{schema}}.sessions (` + sessionColumns + `, ends_at)
		SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::bytea, $8::text, $9::bigint,
			$10::bigint, $11::bigint, $12::bigint, $13::bigint
		WHERE $15::integer <= 0 OR (SELECT count(*) FROM (SELECT 1 FROM {{schema}}.sessions
			WHERE endpoint = $2 AND tenant = $3 AND principal = $4 AND ends_at > $14::bigint
			LIMIT $15::integer) c) < $15::integer`

	// $1 key, $2 now.
	sqlLoadSession = `SELECT ` + sessionColumns + ` FROM {{schema}}.sessions WHERE key = $1 AND ends_at > $2`

	// $1 key, $2 now. LastUsedAt never goes backwards, so a node whose
	// clock lags never shortens a session.
	sqlTouchSession = `UPDATE {{schema}}.sessions SET last_used_at = GREATEST(last_used_at, $2::bigint),
		ends_at = LEAST(expires_at, GREATEST(last_used_at, $2::bigint) + idle_timeout_ms)
		WHERE key = $1 AND ends_at > $2::bigint`

	// $1 key, $2 now, $3 level.
	sqlSetSessionLevel = `UPDATE {{schema}}.sessions SET log_level = $3 WHERE key = $1 AND ends_at > $2`

	// $1 key; returns when the deleted session ended.
	sqlDeleteSession = `DELETE FROM {{schema}}.sessions WHERE key = $1 RETURNING ends_at`

	// Deletes up to $2 sessions that ended at or before $1, oldest ends
	// first along sessions_ends, skipping rows another sweep (or a Touch)
	// holds, so that concurrent sweeps of several nodes never wait for
	// each other.
	sqlSweepSessions = `DELETE FROM {{schema}}.sessions WHERE key IN (
		SELECT key FROM {{schema}}.sessions WHERE ends_at <= $1 ORDER BY ends_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// queries are the statements of one schema.
type queries struct {
	ident string // the quoted schema
	repl  *strings.Replacer

	findTask, lockForUpdate, acceptResponses                 string
	lockForCancel, requestCancel, cancelRequested            string
	idempotencyHolder, deleteHolder, enqueue                 string
	claim, claimKinds, heartbeat, finish, retry, release     string
	claimQueues                                              string
	recordCategory                                           string
	lockLease, lockKeys, requestInput, rescue, deleteExpired string
	rescueDead, unheldInstances                              string
	pruneOutbox, outboxAfter, outboxLast, pruneJobs          string
	pruneActivity                                            string
	completeBatch, completeBatchCheckpoints, enqueueBatch    string
	listTasks, cursorKey                                     string
	reportProgress                                           string

	lockOwner, countLiveSessions, createSession, loadSession, touchSession string
	setSessionLevel, deleteSession, sweepSessions                          string
}

func newQueries(schema string) queries {
	ident := pgx.Identifier{schema}.Sanitize()
	q := queries{
		ident: ident,
		repl: strings.NewReplacer(
			"{{schema}}", ident,
			"{{channel}}", quoteLiteral(schema+channelSuffix),
			"{{now}}", nowExpr(1),
		),
	}
	q.findTask = q.expand(sqlFindTask)
	q.lockForUpdate = q.expand(sqlLockForUpdate)
	q.acceptResponses = q.expand(sqlAcceptResponses)
	q.lockForCancel = q.expand(sqlLockForCancel)
	q.requestCancel = q.expand(sqlRequestCancel)
	q.cancelRequested = q.expand(sqlCancelRequested)
	q.idempotencyHolder = q.expand(sqlIdempotencyHolder)
	q.deleteHolder = q.expand(sqlDeleteHolder)
	q.enqueue = q.expand(sqlEnqueue)
	q.claim = q.expand(strings.Replace(sqlClaim, "{{kinds}}", "", 1))
	q.claimKinds = q.expand(strings.Replace(sqlClaim, "{{kinds}}", "AND kind = ANY($7::text[])", 1))
	q.claimQueues = q.expand(sqlClaimQueues)
	q.heartbeat = q.expand(sqlHeartbeat)
	q.finish = q.expand(sqlFinish)
	q.completeBatch = q.expand(strings.Replace(sqlCompleteBatch, "{{checkpoints}}", "", 1))
	q.completeBatchCheckpoints = q.expand(strings.Replace(sqlCompleteBatch, "{{checkpoints}}", completeCheckpoints, 1))
	q.enqueueBatch = q.expand(sqlEnqueueBatch)
	q.retry = q.expand(sqlRetry)
	q.recordCategory = q.expand(sqlRecordCategory)
	q.release = q.expand(sqlRelease)
	q.lockLease = q.expand(sqlLockLease)
	q.lockKeys = q.expand(sqlLockKeys)
	q.requestInput = q.expand(sqlRequestInput)
	q.rescue = q.expand(strings.Replace(sqlRescue, "{{candidates}}", rescueExpired, 1))
	q.rescueDead = q.expand(strings.Replace(sqlRescue, "{{candidates}}", rescueDead, 1))
	q.unheldInstances = q.expand(sqlUnheldInstances)
	q.deleteExpired = q.expand(sqlDeleteExpired)
	q.pruneOutbox = q.expand(sqlPruneOutbox)
	q.pruneJobs = q.expand(sqlPruneJobs)
	q.pruneActivity = q.expand(sqlPruneActivity)
	q.outboxAfter = q.expand(sqlOutboxAfter)
	q.outboxLast = q.expand(sqlOutboxLast)
	q.listTasks = q.expand(sqlListTasks)
	q.reportProgress = q.expand(sqlReportProgress)
	q.cursorKey = q.expand(sqlCursorKey)
	q.lockOwner = sqlLockOwner
	q.countLiveSessions = q.expand(sqlCountLiveSessions)
	q.createSession = q.expand(sqlCreateSession)
	q.loadSession = q.expand(sqlLoadSession)
	q.touchSession = q.expand(sqlTouchSession)
	q.setSessionLevel = q.expand(sqlSetSessionLevel)
	q.deleteSession = q.expand(sqlDeleteSession)
	q.sweepSessions = q.expand(sqlSweepSessions)
	return q
}

// expand substitutes the schema, channel and clock into a template.
func (q *queries) expand(tmpl string) string { return q.repl.Replace(tmpl) }

// nowExpr is the SQL time of parameter $n: its value, or the database's
// clock in whole milliseconds when it is NULL.
func nowExpr(n int) string {
	return "coalesce($" + strconv.Itoa(n) + "::timestamptz, date_trunc('milliseconds', now()))"
}
