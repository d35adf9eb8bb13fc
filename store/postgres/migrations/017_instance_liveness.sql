-- 017_instance_liveness: the process instance that claimed a running job
-- (backend.LivenessRescuer).
--
-- lease_instance is the instance a claim named (backend.ClaimParams.Instance),
-- NULL when it named none. The instance holds a session-level advisory lock
-- whose two keys are the high and low 31-bit halves of lease_instance for
-- as long as it lives; a rescuer takes the running jobs of an instance
-- whose lock is no longer held by any session (pg_locks) instead of
-- waiting for their leases to expire. Only the claim writes it; the other
-- writes leave it, as the rescue reads it of running jobs only.
--
-- Additive: nodes of version 16 claim without an instance (the column
-- stays NULL on their claims), and their jobs are rescued by lease expiry
-- as before. Adding a nullable column rewrites no rows.

ALTER TABLE {{schema}}.jobs ADD COLUMN lease_instance BIGINT;
