-- 004_interrupted_runs: a run lost to a crash is not a handler failure.
--
-- Up to version 3, RescueExpired counted an expired lease as a failure
-- against max_attempts, so a few crashes of the processes running a job
-- failed it. A rescue now counts an interrupted run in interrupted_runs,
-- against a limit of its own that the rescuing worker passes, and failures
-- count handler failures (Retry) only. Rescued, released and answered jobs
-- also keep their run_at, and with it their place in the claim order.
--
-- Additive: nodes of version 3 still running during a rolling upgrade never
-- read the column; their inserts get the default, and their rescues keep
-- counting failures (the old behaviour) until they are replaced. Adding a
-- column with a constant default rewrites no rows.

ALTER TABLE {{schema}}.jobs ADD COLUMN interrupted_runs INTEGER NOT NULL DEFAULT 0;
