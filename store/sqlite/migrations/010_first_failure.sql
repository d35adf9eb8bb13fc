-- 010_first_failure: when a job's failures began.
--
-- A job's handler failures were bounded by their count alone, so a fault
-- of a dependency that outlasted the backoff of max_attempts failures
-- failed its tasks for good. Retry now notes the time of the job's first
-- failure in first_failure_at (Unix milliseconds; NULL: none), and a
-- failure of category unavailable is retried past max_attempts: the worker
-- runtime fails such a task only once its failures have also lasted its
-- retry window.
--
-- Processes of an earlier version still running on the same file never
-- write the column and never report the category.

ALTER TABLE jobs ADD COLUMN first_failure_at INTEGER;
