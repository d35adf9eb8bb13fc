-- 003_write_costs: writes touch fewer pages.
--
-- Additive, like 002: nodes of versions 1 and 2 keep working during a
-- rolling upgrade (version 1 and 2 listeners replay a batch row below as a
-- hint for no task).

-- The immutability trigger runs its function only for rows that are
-- terminal already, instead of for every update.
DROP TRIGGER tasks_terminal_immutable ON {{schema}}.tasks;
CREATE TRIGGER tasks_terminal_immutable BEFORE UPDATE ON {{schema}}.tasks
    FOR EACH ROW WHEN (OLD.status IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION {{schema}}.tasks_terminal_immutable();

-- PruneOutbox walks the primary key instead; one index fewer to maintain
-- for every change.
DROP INDEX {{schema}}.outbox_created;

-- A batch of completions records one outbox row naming all its tasks
-- (task_id is then ''), instead of a row per task.
ALTER TABLE {{schema}}.outbox ADD COLUMN task_ids TEXT[];

-- Pages of tasks keep half their room free, for the updated versions of
-- their rows: a worker completes the tasks created together (neighbours on
-- a page) together, and an update that finds room on its page is HOT (no
-- index entries, no new page). It applies to pages written from now on and
-- costs about twice the space of the live rows.
ALTER TABLE {{schema}}.tasks SET (fillfactor = 50);
