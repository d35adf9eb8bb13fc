-- 009_task_events: the history an operator reads (package console).
--
-- One row per step of a task's life: created, each claim (attempt, worker),
-- releases, lost leases (rescues), retries, input rounds, progress
-- messages, cancellation requests and the terminal state. Row triggers
-- write them, so every step is recorded in the transaction that makes it,
-- by every node whatever its version; each trigger has a WHEN clause, so
-- writes that record nothing (heartbeats) run no function. Task changes
-- carry the task's own time, job changes the transaction's. A task keeps
-- its 200 newest events: each insert deletes the older ones of its task,
-- reading at most 201 entries of task_events_task. Rows go with their task
-- (ON DELETE CASCADE), at its expiry or an operator's deletion.
--
-- task_events_ended serves the console's throughput chart; tasks_created
-- the cross-tenant listing, newest first.

CREATE TABLE {{schema}}.task_events (
    id      BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id TEXT        NOT NULL REFERENCES {{schema}}.tasks (id) ON DELETE CASCADE,
    at      TIMESTAMPTZ NOT NULL,
    kind    TEXT        NOT NULL,
    attempt BIGINT      NOT NULL DEFAULT 0,
    worker  TEXT        NOT NULL DEFAULT '',
    message TEXT        NOT NULL DEFAULT ''
);

CREATE INDEX task_events_task ON {{schema}}.task_events (task_id, id);

CREATE INDEX task_events_ended ON {{schema}}.task_events (at, kind) WHERE kind IN ('completed', 'failed', 'cancelled');

CREATE INDEX tasks_created ON {{schema}}.tasks (created_at, id);

CREATE FUNCTION {{schema}}.task_event_add(p_task TEXT, p_at TIMESTAMPTZ, p_kind TEXT, p_attempt BIGINT,
    p_worker TEXT, p_message TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, worker, message)
        VALUES (p_task, p_at, p_kind, p_attempt, coalesce(p_worker, ''), coalesce(p_message, ''));
    DELETE FROM {{schema}}.task_events WHERE task_id = p_task AND id <= (
        SELECT id FROM {{schema}}.task_events WHERE task_id = p_task ORDER BY id DESC LIMIT 1 OFFSET 200);
END $$;

CREATE FUNCTION {{schema}}.task_event_from_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k TEXT;
    a BIGINT;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM {{schema}}.task_event_add(NEW.id, NEW.created_at, 'created', 0, '', '');
        RETURN NULL;
    END IF;
    SELECT attempt INTO a FROM {{schema}}.jobs WHERE task_id = NEW.id;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        k := CASE NEW.status WHEN 'working' THEN 'input_answered' ELSE NEW.status END;
        PERFORM {{schema}}.task_event_add(NEW.id, NEW.updated_at, k, coalesce(a, 0), '', NEW.status_message);
    ELSIF NEW.status = 'working' AND (NEW.status_message IS DISTINCT FROM OLD.status_message
            OR NEW.progress IS DISTINCT FROM OLD.progress OR NEW.progress_total IS DISTINCT FROM OLD.progress_total) THEN
        PERFORM {{schema}}.task_event_add(NEW.id, NEW.updated_at, 'progress', coalesce(a, 0), '', NEW.status_message);
    END IF;
    IF NEW.cancel_requested AND NOT OLD.cancel_requested THEN
        PERFORM {{schema}}.task_event_add(NEW.id, now(), 'cancel_requested', coalesce(a, 0), '', '');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION {{schema}}.task_event_from_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.attempt > OLD.attempt THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'claimed', NEW.attempt, NEW.lease_owner, '');
    ELSIF NEW.failures > OLD.failures THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'retry', NEW.attempt, OLD.lease_owner,
            'failure ' || NEW.failures || ' of ' || NEW.max_attempts);
    ELSIF NEW.interrupted_runs > OLD.interrupted_runs THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'lease_lost', NEW.attempt, OLD.lease_owner,
            'interrupted run ' || NEW.interrupted_runs);
    ELSIF OLD.state = 'running' AND NEW.state = 'available' THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'released', NEW.attempt, OLD.lease_owner, '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tasks_event_insert AFTER INSERT ON {{schema}}.tasks
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.task_event_from_task();

CREATE TRIGGER tasks_event_update AFTER UPDATE ON {{schema}}.tasks
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status
        OR NEW.status_message IS DISTINCT FROM OLD.status_message
        OR NEW.progress IS DISTINCT FROM OLD.progress OR NEW.progress_total IS DISTINCT FROM OLD.progress_total
        OR NEW.cancel_requested IS DISTINCT FROM OLD.cancel_requested)
    EXECUTE FUNCTION {{schema}}.task_event_from_task();

CREATE TRIGGER jobs_event_update AFTER UPDATE ON {{schema}}.jobs
    FOR EACH ROW WHEN (NEW.attempt > OLD.attempt OR NEW.failures > OLD.failures
        OR NEW.interrupted_runs > OLD.interrupted_runs OR (OLD.state = 'running' AND NEW.state = 'available'))
    EXECUTE FUNCTION {{schema}}.task_event_from_job();
