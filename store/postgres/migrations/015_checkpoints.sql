-- 015_checkpoints: a running job's checkpoint (backend.Checkpointer).
--
-- checkpoint holds the last checkpoint a run of the job saved (NULL: none),
-- at most backend.MaxCheckpointBytes bytes, and checkpoint_at when it was
-- saved. The columns are the job's: the claim statement returns them with
-- the job row, so a re-run resumes without a query of its own, and they go
-- with the row (with its task, or when PruneJobs deletes a finished job).
-- A checkpoint larger than about 2 kB is stored out of line (TOAST), so
-- the other writes of a running job (heartbeats, the final write) copy a
-- pointer, not the checkpoint. Each checkpoint is also a checkpoint row of
-- task_events (task_event_add_at), with its size as the message.
--
-- Additive: nodes of version 14 still running during a rolling upgrade
-- never write the columns and never read them. Adding nullable columns
-- rewrites no rows.

ALTER TABLE {{schema}}.jobs ADD COLUMN checkpoint BYTEA, ADD COLUMN checkpoint_at TIMESTAMPTZ;
