-- 012_checkpoints: a running job's checkpoint (backend.Checkpointer).
--
-- checkpoint holds the last checkpoint a run of the job saved (NULL: none),
-- at most backend.MaxCheckpointBytes bytes, and checkpoint_at when it was
-- saved (Unix milliseconds). The columns are the job's: every claim reads
-- them with the job row, so a re-run resumes without a query of its own,
-- and they go with the row (with its task, or when PruneJobs deletes a
-- finished job). Each checkpoint is also a checkpoint row of task_events,
-- with its size as the message, written by the saving statement.
--
-- Additive: processes of version 11 still running on the file never write
-- the columns and never read them.

ALTER TABLE jobs ADD COLUMN checkpoint BLOB;
ALTER TABLE jobs ADD COLUMN checkpoint_at INTEGER;
