-- 003_interrupted_runs: a run lost to a crash is not a handler failure.
--
-- Up to version 2, RescueExpired counted an expired lease as a failure
-- against max_attempts, so a few crashes of the processes running a job
-- failed it. A rescue now counts an interrupted run in interrupted_runs,
-- against a limit of its own that the rescuing worker passes, and failures
-- count handler failures (Retry) only. Rescued, released and answered jobs
-- also keep their run_at, and with it their place in the claim order.
--
-- Processes of version 2 still running on the same file never read the
-- column; their inserts get the default, and their rescues keep counting
-- failures until they are restarted.

ALTER TABLE jobs ADD COLUMN interrupted_runs INTEGER NOT NULL DEFAULT 0;
