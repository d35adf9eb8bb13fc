-- 002_claim_columns: claims read the jobs table alone.
--
-- Version 1 claimed by joining every available job with its task (for the
-- kind and the expiry) and sorting the result, so a claim cost grew with the
-- queue. The job row now repeats the task's kind and expires_at, both fixed
-- at creation, and a claim walks the jobs_claim index in order and stops at
-- its limit.
--
-- The migration is additive: nodes of version 1 still running during a
-- rolling upgrade insert jobs without the new columns, and the trigger
-- fills them in from the task row. Version 1 nodes also keep calling
-- task_event, which is left in place; newer code writes outbox rows
-- directly and sends its notifications after commit.

ALTER TABLE {{schema}}.jobs ADD COLUMN kind TEXT, ADD COLUMN expires_at TIMESTAMPTZ;

UPDATE {{schema}}.jobs j SET kind = t.kind, expires_at = t.expires_at
FROM {{schema}}.tasks t WHERE t.id = j.task_id;

CREATE FUNCTION {{schema}}.jobs_fill_claim_columns() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT t.kind, t.expires_at INTO NEW.kind, NEW.expires_at FROM {{schema}}.tasks t WHERE t.id = NEW.task_id;
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_fill_claim_columns BEFORE INSERT ON {{schema}}.jobs
    FOR EACH ROW WHEN (NEW.kind IS NULL) EXECUTE FUNCTION {{schema}}.jobs_fill_claim_columns();

ALTER TABLE {{schema}}.jobs ALTER COLUMN kind SET NOT NULL;
