-- 011_input_rounds: an input round is not an attempt.
--
-- Every claim bumps attempt, the token that fences the claim's writes, so
-- the claim that resumes a task after its client answered got the next
-- attempt, and a task that asked for input once read as on its second
-- attempt without having failed. RequestInput now counts the round in
-- input_rounds, and the attempt people read is attempt less input_rounds
-- (backend.JobRow.AttemptNumber); fencing is unchanged.
--
-- Additive: nodes of version 10 still running during a rolling upgrade
-- never write the column, so their rounds count as attempts, as they did.
-- Adding a column with a constant default rewrites no rows.

ALTER TABLE {{schema}}.jobs ADD COLUMN input_rounds INTEGER NOT NULL DEFAULT 0;
