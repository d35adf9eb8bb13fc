-- 005_progress: the progress count a worker reports.
--
-- A running job reports a status message (kept in status_message) with an
-- optional count: progress units done out of progress_total (0: unknown
-- total). Both are NULL when the last report carried no numbers, or none
-- was made. tasks/get of the 2026 wire shows only the message; 2025-era
-- clients waiting inline receive the numbers in notifications/progress.
--
-- Additive: processes of version 4 on the same file never read the
-- columns, and their writes leave them as they are.

ALTER TABLE tasks ADD COLUMN progress REAL CHECK (progress >= 0);
ALTER TABLE tasks ADD COLUMN progress_total REAL CHECK (progress_total >= 0);
