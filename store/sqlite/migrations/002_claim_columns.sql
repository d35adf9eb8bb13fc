-- 002_claim_columns: claims read the jobs table in index order; outbox
-- rows name their writer.
--
-- Version 1 claimed by joining every due job with its task (for the kind,
-- the expiry, the creation time it ordered by and the cancel intent of jobs
-- awaiting input) and sorting the result, so a claim cost grew with the
-- queue. The job row now repeats the task's kind, creation time and expiry,
-- all fixed at creation; a job awaiting input whose task is asked to cancel
-- becomes available (as on PostgreSQL); and a claim walks jobs_claim_order
-- in order and stops at its limit.
--
-- Processes of version 1 still running on the same file insert jobs
-- without the new columns: the trigger fills them in from the task row.

ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN expires_at INTEGER;

UPDATE jobs SET (kind, created_at, expires_at) =
    (SELECT t.kind, t.created_at, t.expires_at FROM tasks t WHERE t.id = jobs.task_id);

UPDATE jobs SET state = 'available'
WHERE state = 'awaiting_input' AND task_id IN (SELECT id FROM tasks WHERE cancel_requested = 1);

CREATE TRIGGER jobs_fill_claim_columns AFTER INSERT ON jobs WHEN NEW.kind = ''
BEGIN
    UPDATE jobs SET (kind, created_at, expires_at) =
        (SELECT t.kind, t.created_at, t.expires_at FROM tasks t WHERE t.id = NEW.task_id)
    WHERE task_id = NEW.task_id;
END;

DROP INDEX jobs_claim;
CREATE INDEX jobs_claim_order ON jobs (run_at, created_at, task_id) WHERE state = 'available';

-- Each outbox row names the Store that wrote it, so that a Store can publish
-- the changes other processes commit to the same file (see events.go).
ALTER TABLE outbox ADD COLUMN writer TEXT NOT NULL DEFAULT '';
