-- 014_instance_liveness: the process instance that claimed a running job
-- (backend.LivenessRescuer).
--
-- lease_instance is the instance a claim named (backend.ClaimParams.Instance),
-- NULL when it named none. The instance holds an exclusive flock on the lock
-- file of that name in the directory next to the database file for as long
-- as it lives; a rescuer on the same host that can lock the file knows the
-- owner is dead and takes its running jobs instead of waiting for their
-- leases to expire. Only the claim writes it.
--
-- Additive: processes of version 13 claim without an instance (the column
-- stays NULL on their claims), and their jobs are rescued by lease expiry
-- as before.

ALTER TABLE jobs ADD COLUMN lease_instance TEXT;
