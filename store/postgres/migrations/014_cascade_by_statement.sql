-- 014_cascade_by_statement: creating a task checks no foreign key.
--
-- Up to version 13 jobs.task_id and task_events.task_id referenced
-- tasks (id) ON DELETE CASCADE. The constraint made every Enqueue look up
-- and lock the task row it had just inserted, in the same statement, to
-- check the job's reference (about a fifth of the insert's time), and
-- every history row do the same. Jobs and history rows are only ever
-- written for a task that exists: a job in the statement that creates its
-- task, a history row by a statement that holds the task's or the job's
-- row. What the constraint still did is the cascade, which a statement
-- trigger on tasks now does for each deleting statement at once, from the
-- deleted rows.
--
-- Additive: nodes of version 13 delete tasks the same way and the
-- trigger removes the jobs and history of their deletions too; they never
-- relied on the constraint to refuse a write.

ALTER TABLE {{schema}}.jobs DROP CONSTRAINT IF EXISTS jobs_task_id_fkey;
ALTER TABLE {{schema}}.task_events DROP CONSTRAINT IF EXISTS task_events_task_id_fkey;

CREATE FUNCTION {{schema}}.tasks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {{schema}}.jobs WHERE task_id IN (SELECT id FROM deleted);
    DELETE FROM {{schema}}.task_events WHERE task_id IN (SELECT id FROM deleted);
    RETURN NULL;
END $$;

CREATE TRIGGER tasks_cascade AFTER DELETE ON {{schema}}.tasks
    REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.tasks_deleted();
