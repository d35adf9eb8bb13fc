-- 010_failure_categories: why a handler run failed, and when its job runs
-- again, on the history's retry and failed events.
--
-- category is one of backend.FailureCategory's values, never an error's
-- text. The triggers that record a step cannot know it (only the worker
-- does), so the store's Retry and Fail set it, in the transaction that
-- recorded the step, on the events of that claim (task, attempt); steps
-- recorded by nodes that predate this version keep '' (none), never
-- another run's category. run_at is the job's next run, for a retry that
-- left it queued (NULL otherwise): the job trigger records it, whichever
-- node made the retry. task_event_add keeps its signature for the task
-- trigger; task_event_add_at takes the run time too.

ALTER TABLE {{schema}}.task_events ADD COLUMN category TEXT NOT NULL DEFAULT '',
    ADD COLUMN run_at TIMESTAMPTZ;

CREATE FUNCTION {{schema}}.task_event_add_at(p_task TEXT, p_at TIMESTAMPTZ, p_kind TEXT, p_attempt BIGINT,
    p_worker TEXT, p_message TEXT, p_run_at TIMESTAMPTZ) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.task_events (task_id, at, kind, attempt, worker, message, run_at)
        VALUES (p_task, p_at, p_kind, p_attempt, coalesce(p_worker, ''), coalesce(p_message, ''), p_run_at);
    DELETE FROM {{schema}}.task_events WHERE task_id = p_task AND id <= (
        SELECT id FROM {{schema}}.task_events WHERE task_id = p_task ORDER BY id DESC LIMIT 1 OFFSET 200);
END $$;

CREATE OR REPLACE FUNCTION {{schema}}.task_event_add(p_task TEXT, p_at TIMESTAMPTZ, p_kind TEXT, p_attempt BIGINT,
    p_worker TEXT, p_message TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM {{schema}}.task_event_add_at(p_task, p_at, p_kind, p_attempt, p_worker, p_message, NULL);
END $$;

CREATE OR REPLACE FUNCTION {{schema}}.task_event_from_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.attempt > OLD.attempt THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'claimed', NEW.attempt, NEW.lease_owner, '');
    ELSIF NEW.failures > OLD.failures THEN
        PERFORM {{schema}}.task_event_add_at(NEW.task_id, now(), 'retry', NEW.attempt, OLD.lease_owner,
            'failure ' || NEW.failures || ' of ' || NEW.max_attempts,
            CASE WHEN NEW.state = 'available' THEN NEW.run_at END);
    ELSIF NEW.interrupted_runs > OLD.interrupted_runs THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'lease_lost', NEW.attempt, OLD.lease_owner,
            'interrupted run ' || NEW.interrupted_runs);
    ELSIF OLD.state = 'running' AND NEW.state = 'available' THEN
        PERFORM {{schema}}.task_event_add(NEW.task_id, now(), 'released', NEW.attempt, OLD.lease_owner, '');
    END IF;
    RETURN NULL;
END $$;
