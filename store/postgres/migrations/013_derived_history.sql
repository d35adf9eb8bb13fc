-- 013_derived_history: the common steps of a task's history cost no rows.
--
-- Up to version 12, triggers wrote a task_events row when a task was
-- created, at every claim and when it completed: two rows per job, written
-- by PL/pgSQL in the claim and completion transactions, which cost more
-- than the rest of the worker's writes together. Those steps are in the
-- task and job rows already, so they are now derived when the history is
-- read (internal/storerules.MergeHistory):
--   - created: tasks.created_at;
--   - the job's current claim: claimed_at, claimed_by and claimed_attempt,
--     which the claim statement sets (claimed_attempt names the attempt
--     the two others belong to);
--   - completed: the task row (status, updated_at, status_message).
-- A claim becomes a row only when a later claim replaces it in the job
-- row (a retry, a release, a lost lease, an input round: the uncommon
-- lives), and PruneJobs writes the current claim and the completion as
-- rows before it deletes a job. Failed and cancelled tasks keep their
-- terminal rows, with their failure categories. task_event_add_at no
-- longer goes through task_event_add.
--
-- The console's throughput chart counted completed rows; completions are
-- now counted in task_activity, one row per minute, node and slot, which
-- the completing statement adds to (a batch adds its count once): the
-- slots keep concurrent batches of one node, and other nodes, from waiting
-- for each other's row locks. Failed and cancelled tasks are still counted
-- from their rows. Rows older than the chart's window are deleted with the
-- outbox's.
--
-- Additive: during a rolling upgrade, nodes of version 12 write no claim
-- columns and do not count completions. Their claims are recorded as rows
-- at once, as before (the claim did not set claimed_attempt); their
-- tasks' creations and completions are derived like everyone's; their
-- completions are missing from the chart until they are replaced.

ALTER TABLE {{schema}}.jobs ADD COLUMN claimed_at TIMESTAMPTZ, ADD COLUMN claimed_by TEXT,
    ADD COLUMN claimed_attempt BIGINT;

CREATE TABLE {{schema}}.task_activity (
    minute    TIMESTAMPTZ NOT NULL,
    node      TEXT        NOT NULL,
    slot      SMALLINT    NOT NULL,
    completed BIGINT      NOT NULL,
    PRIMARY KEY (minute, node, slot)
);

DROP TRIGGER tasks_event_insert ON {{schema}}.tasks;

CREATE OR REPLACE FUNCTION {{schema}}.task_event_add(p_task TEXT, p_at TIMESTAMPTZ, p_kind TEXT, p_attempt BIGINT,
    p_worker TEXT, p_message TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, worker, message)
        VALUES (p_task, p_at, p_kind, p_attempt, coalesce(p_worker, ''), coalesce(p_message, ''));
    DELETE FROM {{schema}}.task_events WHERE task_id = p_task AND id <= (
        SELECT id FROM {{schema}}.task_events WHERE task_id = p_task ORDER BY id DESC LIMIT 1 OFFSET 200);
END $$;

CREATE OR REPLACE FUNCTION {{schema}}.task_event_from_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k TEXT;
    a BIGINT;
BEGIN
    SELECT attempt INTO a FROM {{schema}}.jobs WHERE task_id = NEW.id;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NEW.status <> 'completed' THEN
            k := CASE NEW.status WHEN 'working' THEN 'input_answered' ELSE NEW.status END;
            PERFORM {{schema}}.task_event_add(NEW.id, NEW.updated_at, k, coalesce(a, 0), '', NEW.status_message);
        END IF;
    ELSIF NEW.status = 'working' AND (NEW.status_message IS DISTINCT FROM OLD.status_message
            OR NEW.progress IS DISTINCT FROM OLD.progress OR NEW.progress_total IS DISTINCT FROM OLD.progress_total) THEN
        PERFORM {{schema}}.task_event_add(NEW.id, NEW.updated_at, 'progress', coalesce(a, 0), '', NEW.status_message);
    END IF;
    IF NEW.cancel_requested AND NOT OLD.cancel_requested THEN
        PERFORM {{schema}}.task_event_add(NEW.id, now(), 'cancel_requested', coalesce(a, 0), '', '');
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER tasks_event_update ON {{schema}}.tasks;
CREATE TRIGGER tasks_event_update AFTER UPDATE ON {{schema}}.tasks
    FOR EACH ROW WHEN ((NEW.status IS DISTINCT FROM OLD.status AND NEW.status <> 'completed')
        OR (NEW.status = 'working' AND OLD.status = 'working' AND (NEW.status_message IS DISTINCT FROM OLD.status_message
            OR NEW.progress IS DISTINCT FROM OLD.progress OR NEW.progress_total IS DISTINCT FROM OLD.progress_total))
        OR (NEW.cancel_requested AND NOT OLD.cancel_requested))
    EXECUTE FUNCTION {{schema}}.task_event_from_task();

CREATE OR REPLACE FUNCTION {{schema}}.task_event_add_at(p_task TEXT, p_at TIMESTAMPTZ, p_kind TEXT, p_attempt BIGINT,
    p_worker TEXT, p_message TEXT, p_run_at TIMESTAMPTZ) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, worker, message, run_at)
        VALUES (p_task, p_at, p_kind, p_attempt, coalesce(p_worker, ''), coalesce(p_message, ''), p_run_at);
    DELETE FROM {{schema}}.task_events WHERE task_id = p_task AND id <= (
        SELECT id FROM {{schema}}.task_events WHERE task_id = p_task ORDER BY id DESC LIMIT 1 OFFSET 200);
END $$;

CREATE OR REPLACE FUNCTION {{schema}}.task_event_from_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.attempt > OLD.attempt THEN
        IF OLD.claimed_attempt = OLD.attempt AND OLD.claimed_at IS NOT NULL THEN
            PERFORM {{schema}}.task_event_add_at(NEW.task_id, OLD.claimed_at, 'claimed', OLD.attempt, OLD.claimed_by, '',
                NULL);
        END IF;
        IF NEW.claimed_attempt IS DISTINCT FROM NEW.attempt THEN
            PERFORM {{schema}}.task_event_add_at(NEW.task_id, now(), 'claimed', NEW.attempt, NEW.lease_owner, '', NULL);
        END IF;
    ELSIF NEW.failures > OLD.failures THEN
        PERFORM {{schema}}.task_event_add_at(NEW.task_id, now(), 'retry', NEW.attempt, OLD.lease_owner,
            'failure ' || NEW.failures || ' of ' || NEW.max_attempts,
            CASE WHEN NEW.state = 'available' THEN NEW.run_at END);
    ELSIF NEW.interrupted_runs > OLD.interrupted_runs THEN
        PERFORM {{schema}}.task_event_add_at(NEW.task_id, now(), 'lease_lost', NEW.attempt, OLD.lease_owner,
            'interrupted run ' || NEW.interrupted_runs, NULL);
    ELSIF OLD.state = 'running' AND NEW.state = 'available' THEN
        PERFORM {{schema}}.task_event_add_at(NEW.task_id, now(), 'released', NEW.attempt, OLD.lease_owner, '', NULL);
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER jobs_event_update ON {{schema}}.jobs;
CREATE TRIGGER jobs_event_update AFTER UPDATE ON {{schema}}.jobs
    FOR EACH ROW WHEN ((NEW.attempt > OLD.attempt AND (OLD.attempt > 0 OR NEW.claimed_attempt IS DISTINCT FROM NEW.attempt))
        OR NEW.failures > OLD.failures OR NEW.interrupted_runs > OLD.interrupted_runs
        OR (OLD.state = 'running' AND NEW.state = 'available'))
    EXECUTE FUNCTION {{schema}}.task_event_from_job();
