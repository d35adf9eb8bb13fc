-- 013_queues: named queues and priorities (backend.EnqueueOptions.Queue
-- and Priority).
--
-- Each job belongs to a queue and has a priority within it (1 highest, 4
-- lowest), both fixed at creation. A claim names one queue and walks
-- jobs_claim_queue, which leads with the queue and the priority, in
-- order: the equality on queue and the order by priority, run_at,
-- created_at and task_id are the index's own, so the scan stops at the
-- claim's limit whatever the length of the queue or of the other queues.
-- A job not due yet (a delay or a retry's backoff) of a higher priority
-- than the jobs claimed is stepped over in the index, not sorted.
--
-- Existing jobs, and jobs inserted by processes of version 12 still
-- running on the file, get the default queue and priority from the column
-- defaults. jobs_claim_order, which claims of version 12 name (INDEXED
-- BY), goes: such a process fails its claims until it is restarted on
-- this version, and its other writes go on.

ALTER TABLE jobs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 1;

-- The task row repeats them, so that an operator's retry of a failed task
-- (backend.Operator.Retry) enqueues in the same queue after its job row
-- was pruned.
ALTER TABLE tasks ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 1;

DROP INDEX jobs_claim_order;
CREATE INDEX jobs_claim_queue ON jobs (queue, priority, run_at, created_at, task_id) WHERE state = 'available';
