-- 013_reserved_queues: reserved for the queues migration of another branch,
-- so that the numbering has no gap; it changes nothing. The branch that
-- brings the real 013 replaces this file.

SELECT 1;
