-- 008_failure_categories: why a handler run failed, and when its job runs
-- again, on the history's retry and failed events.
--
-- category is one of backend.FailureCategory's values, never an error's
-- text. The trigger that records a step cannot know it (only the worker
-- does), so the store's Retry and Fail set it, in the transaction that
-- recorded the step, on the events of that claim (task, attempt); steps
-- recorded by code that predates this version keep '' (none), never
-- another run's category. run_at is the job's next run, for a retry that
-- left it queued (NULL otherwise): the trigger records it, whichever
-- version of the code made the retry.

ALTER TABLE task_events ADD COLUMN category TEXT NOT NULL DEFAULT '';

ALTER TABLE task_events ADD COLUMN run_at INTEGER;

DROP TRIGGER jobs_event_retry;

CREATE TRIGGER jobs_event_retry AFTER UPDATE OF failures ON jobs WHEN NEW.failures > OLD.failures
BEGIN
    INSERT INTO task_events (task_id, at, kind, attempt, worker, message, run_at) VALUES (NEW.task_id,
        CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'retry', NEW.attempt,
        coalesce(OLD.lease_owner, ''), 'failure ' || NEW.failures || ' of ' || NEW.max_attempts,
        CASE WHEN NEW.state = 'available' THEN NEW.run_at END);
END;
