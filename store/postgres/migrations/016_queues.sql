-- 016_queues: named queues and priorities (backend.EnqueueOptions.Queue
-- and Priority).
--
-- Each job belongs to a queue and has a priority within it (1 highest, 4
-- lowest), both fixed at creation. A claim names one queue and walks
-- jobs_claim_queue, which leads with the queue and the priority, in
-- order: the equality on queue and the order by priority, run_at,
-- created_at and task_id are the index's own, so a claim stays one index
-- range scan that stops at its limit, whatever the length of the queue or
-- of the other queues. A job not due yet (a delay, a retry's backoff) of
-- a higher priority than the jobs claimed is stepped over in the index,
-- not sorted.
--
-- Adding a column with a constant default rewrites no rows. Nodes of
-- version 15 still running during a rolling upgrade insert jobs that get
-- the default queue and priority, and claim every queue in run_at order;
-- without jobs_claim, which goes, such a claim sorts the due jobs instead
-- of walking an index, so finish the upgrade before the backlog grows.

ALTER TABLE {{schema}}.jobs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default',
    ADD COLUMN priority SMALLINT NOT NULL DEFAULT 1;

-- The task row repeats them, so that an operator's retry of a failed task
-- (backend.Operator.Retry) enqueues in the same queue after its job row
-- was pruned.
ALTER TABLE {{schema}}.tasks ADD COLUMN queue TEXT NOT NULL DEFAULT 'default',
    ADD COLUMN priority SMALLINT NOT NULL DEFAULT 1;

DROP INDEX {{schema}}.jobs_claim;
CREATE INDEX jobs_claim_queue ON {{schema}}.jobs (queue, priority, run_at, created_at, task_id)
    WHERE state = 'available';
