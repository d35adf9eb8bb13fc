-- 007_task_events: the history an operator reads (package console).
--
-- One row per step of a task's life: created, each claim (attempt, worker),
-- releases, lost leases (rescues), retries, input rounds, progress
-- messages, cancellation requests and the terminal state. Triggers write
-- them, so every step is recorded in the transaction that makes it, by
-- every version of the code that writes to the file. Times are Unix
-- milliseconds: a task's own time for task changes, SQLite's clock for job
-- changes (a claim changes no task column). A task keeps its 200 newest
-- events: each insert deletes the older ones of its task, reading at most
-- 201 entries of task_events_task. Rows go with their task (ON DELETE
-- CASCADE), at its expiry or an operator's deletion.
--
-- task_events_ended serves the console's throughput chart: terminal events
-- of the last hour, in time order.

CREATE TABLE task_events (
    id      INTEGER PRIMARY KEY,
    task_id TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    at      INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    worker  TEXT    NOT NULL DEFAULT '',
    message TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX task_events_task ON task_events (task_id, id);

CREATE INDEX task_events_ended ON task_events (at, kind) WHERE kind IN ('completed', 'failed', 'cancelled');

-- Cross-tenant listing, newest first.
CREATE INDEX tasks_created ON tasks (created_at, id);

-- Listing by status, newest first. It costs one index update per status
-- change.
CREATE INDEX tasks_status ON tasks (status, created_at, id);

-- The console's counts by tool and status, kept by triggers so that the
-- overview reads a few rows instead of every task: tasks held, expired
-- ones included until they are deleted. SQLite has one writer, so the
-- counter rows are never contended.
CREATE TABLE task_counts (
    kind   TEXT    NOT NULL,
    status TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (kind, status)
) STRICT, WITHOUT ROWID;

INSERT INTO task_counts (kind, status, n) SELECT kind, status, count(*) FROM tasks GROUP BY kind, status;

CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks
BEGIN
    INSERT INTO task_counts (kind, status, n) VALUES (NEW.kind, NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_count_status AFTER UPDATE OF status ON tasks WHEN NEW.status IS NOT OLD.status
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE kind = OLD.kind AND status = OLD.status;
    INSERT INTO task_counts (kind, status, n) VALUES (NEW.kind, NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE kind = OLD.kind AND status = OLD.status;
END;

CREATE TRIGGER task_events_bound AFTER INSERT ON task_events
BEGIN
    DELETE FROM task_events WHERE task_id = NEW.task_id AND id <= (
        SELECT id FROM task_events WHERE task_id = NEW.task_id ORDER BY id DESC LIMIT 1 OFFSET 200);
END;

CREATE TRIGGER tasks_event_created AFTER INSERT ON tasks
BEGIN
    INSERT INTO task_events (task_id, at, kind) VALUES (NEW.id, NEW.created_at, 'created');
END;

CREATE TRIGGER tasks_event_status AFTER UPDATE OF status ON tasks WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, message) VALUES (NEW.id, NEW.updated_at,
        CASE NEW.status WHEN 'working' THEN 'input_answered' ELSE NEW.status END,
        coalesce((SELECT attempt FROM jobs WHERE task_id = NEW.id), 0), NEW.status_message);
END;

CREATE TRIGGER tasks_event_progress AFTER UPDATE OF status_message, progress, progress_total ON tasks
WHEN NEW.status = 'working' AND OLD.status = 'working' AND (NEW.status_message IS NOT OLD.status_message
    OR NEW.progress IS NOT OLD.progress OR NEW.progress_total IS NOT OLD.progress_total)
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, message) VALUES (NEW.id, NEW.updated_at, 'progress',
        coalesce((SELECT attempt FROM jobs WHERE task_id = NEW.id), 0), NEW.status_message);
END;

CREATE TRIGGER tasks_event_cancel AFTER UPDATE OF cancel_requested ON tasks
WHEN NEW.cancel_requested = 1 AND OLD.cancel_requested = 0
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt) VALUES (NEW.id,
        CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'cancel_requested',
        coalesce((SELECT attempt FROM jobs WHERE task_id = NEW.id), 0));
END;

CREATE TRIGGER jobs_event_claim AFTER UPDATE OF attempt ON jobs WHEN NEW.attempt > OLD.attempt
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, worker) VALUES (NEW.task_id,
        CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'claimed', NEW.attempt,
        coalesce(NEW.lease_owner, ''));
END;

CREATE TRIGGER jobs_event_retry AFTER UPDATE OF failures ON jobs WHEN NEW.failures > OLD.failures
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, worker, message) VALUES (NEW.task_id,
        CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'retry', NEW.attempt,
        coalesce(OLD.lease_owner, ''), 'failure ' || NEW.failures || ' of ' || NEW.max_attempts);
END;

CREATE TRIGGER jobs_event_rescue AFTER UPDATE OF interrupted_runs ON jobs
WHEN NEW.interrupted_runs > OLD.interrupted_runs
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, worker, message) VALUES (NEW.task_id,
        CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'lease_lost', NEW.attempt,
        coalesce(OLD.lease_owner, ''), 'interrupted run ' || NEW.interrupted_runs);
END;

CREATE TRIGGER jobs_event_release AFTER UPDATE OF state ON jobs
WHEN OLD.state = 'running' AND NEW.state = 'available' AND NEW.attempt = OLD.attempt
    AND NEW.failures = OLD.failures AND NEW.interrupted_runs = OLD.interrupted_runs
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, worker) VALUES (NEW.task_id,
        CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'released', NEW.attempt,
        coalesce(OLD.lease_owner, ''));
END;
