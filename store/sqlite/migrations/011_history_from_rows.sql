-- 011_history_from_rows: the common steps of a task's history are read
-- from the task and job rows instead of being written as events.
--
-- Up to version 10, triggers wrote a created row at every insert, a
-- claimed row at every claim and a completed row at every completion, each
-- with the deletion probe of the 200-row bound: most of the writes of a
-- task's life. Now:
--
--   - created is tasks.created_at: the insert trigger is dropped;
--   - the claim statement sets claimed_at (the claim's time, on the clock
--     of its lease), claimed_by (the worker) and claimed_attempt (the
--     attempt they belong to), and the claim trigger records a claim as a
--     row only once a later claim replaces it, from those columns; a claim
--     that did not set them (a process of version 10 or older still
--     running on the file) is recorded as before, when it is made;
--   - completed is the task row (status, updated_at, status_message) with
--     the job's attempt: the status trigger no longer records it. PruneJobs
--     records the claim and the completion of each job it deletes as rows,
--     so that the history outlives the job row;
--   - completions are counted per minute in task_activity, by the
--     completing statement, for the console's chart (failed and cancelled
--     tasks still come from task_events_ended). The last hour's completed
--     rows are counted into it here. Rows older than an hour are deleted
--     with the expired tasks;
--   - task_counts is adjusted by the completing statement, once per
--     batch, for completions of working tasks under a claim of this
--     version; the trigger counts every other status change, an older
--     process's completions included;
--   - outbox_created goes: PruneOutbox walks the outbox in write order
--     (its primary key), which is time order, and stops at its limit;
--   - tasks_status holds only tasks that are not working (the status
--     listings of working tasks walk tasks_created, where nearly every
--     entry matches), so that creating and completing a task update it
--     once instead of three times.
--
-- Processes of version 10 still running on the file during an upgrade:
-- their claims are recorded as rows when they are made, their tasks'
-- created and completed steps are read from the rows like everyone's,
-- their completions are counted in task_counts by the trigger but not in
-- the activity chart, and their console's listing by status fails (its
-- query names tasks_status, which no longer holds every status) until
-- they are restarted. Their PruneOutbox, without outbox_created, walks
-- the outbox in primary key order, reading every row when none is old
-- enough. Nothing they write is refused.

ALTER TABLE jobs ADD COLUMN claimed_at INTEGER;
ALTER TABLE jobs ADD COLUMN claimed_by TEXT;
ALTER TABLE jobs ADD COLUMN claimed_attempt INTEGER;

DROP TRIGGER tasks_event_created;

DROP TRIGGER tasks_event_status;

CREATE TRIGGER tasks_event_status AFTER UPDATE OF status ON tasks
WHEN NEW.status IS NOT OLD.status AND NEW.status <> 'completed'
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, message) VALUES (NEW.id, NEW.updated_at,
        CASE NEW.status WHEN 'working' THEN 'input_answered' ELSE NEW.status END,
        coalesce((SELECT attempt FROM jobs WHERE task_id = NEW.id), 0), NEW.status_message);
END;

DROP TRIGGER jobs_event_claim;

CREATE TRIGGER jobs_event_claim AFTER UPDATE OF attempt ON jobs
WHEN NEW.attempt > OLD.attempt AND (NEW.claimed_attempt IS NOT NEW.attempt
    OR (OLD.attempt > 0 AND OLD.claimed_attempt = OLD.attempt AND OLD.claimed_at IS NOT NULL))
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, worker)
        SELECT NEW.task_id, OLD.claimed_at, 'claimed', OLD.claimed_attempt, coalesce(OLD.claimed_by, '')
        WHERE OLD.attempt > 0 AND OLD.claimed_attempt = OLD.attempt AND OLD.claimed_at IS NOT NULL;
    INSERT INTO task_events (task_id, at, kind, attempt, worker)
        SELECT NEW.task_id, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'claimed', NEW.attempt,
            coalesce(NEW.lease_owner, '')
        WHERE NEW.claimed_attempt IS NOT NEW.attempt;
END;

DROP TRIGGER tasks_count_status;

CREATE TRIGGER tasks_count_status AFTER UPDATE OF status ON tasks
WHEN NEW.status IS NOT OLD.status AND NOT (OLD.status = 'working' AND NEW.status = 'completed'
    AND EXISTS (SELECT 1 FROM jobs WHERE task_id = NEW.id AND claimed_attempt = attempt))
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE kind = OLD.kind AND status = OLD.status;
    INSERT INTO task_counts (kind, status, n) VALUES (NEW.kind, NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;

-- Completed tasks per minute (Unix time / 60 s).
CREATE TABLE task_activity (
    minute    INTEGER PRIMARY KEY,
    completed INTEGER NOT NULL CHECK (completed >= 0)
) STRICT;

INSERT INTO task_activity (minute, completed)
    SELECT at / 60000, count(*) FROM task_events
    WHERE kind = 'completed' AND at >= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - 3600000
    GROUP BY 1;

DROP INDEX tasks_status;

CREATE INDEX tasks_status ON tasks (status, created_at, id) WHERE status <> 'working';

DROP INDEX outbox_created;
