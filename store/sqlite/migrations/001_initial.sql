-- 001_initial: tasks, their jobs, and the outbox of task changes.
--
-- Times are Unix milliseconds. A task row holds what clients see (status,
-- outstanding input requests, result, error) and its authorization binding
-- (endpoint, tenant, principal); the origin is stored byte for byte. A job
-- row is the task's work queue entry; attempt is the fencing token bumped at
-- every claim. Every observable change inserts an outbox row in the same
-- transaction.

CREATE TABLE tasks (
    id               TEXT    PRIMARY KEY,
    endpoint         TEXT    NOT NULL,
    tenant           TEXT    NOT NULL,
    principal        TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    status           TEXT    NOT NULL CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    status_message   TEXT    NOT NULL DEFAULT '',
    origin           BLOB    NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL CHECK (updated_at >= created_at),
    expires_at       INTEGER,                       -- NULL: never expires
    ttl_ms           INTEGER NOT NULL CHECK (ttl_ms >= 0), -- 0: unlimited
    poll_interval_ms INTEGER NOT NULL CHECK (poll_interval_ms >= 0),
    input_requests   TEXT,                          -- JSON object, outstanding requests
    input_responses  TEXT,                          -- JSON object, every accepted answer
    used_keys        TEXT    NOT NULL DEFAULT '[]', -- JSON array, keys ever requested
    result           TEXT,                          -- JSON CallToolResult
    error            TEXT,                          -- JSON client-safe error
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    idempotency_key  TEXT,
    CHECK ((status = 'input_required') = (input_requests IS NOT NULL)),
    CHECK ((status = 'completed') = (result IS NOT NULL)),
    CHECK ((status = 'failed') = (error IS NOT NULL))
) STRICT;

CREATE UNIQUE INDEX tasks_idempotency ON tasks (tenant, endpoint, kind, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE INDEX tasks_expires ON tasks (expires_at) WHERE expires_at IS NOT NULL;

-- Terminal is terminal: nothing a client sees may change once a task has
-- completed, failed or been cancelled.
CREATE TRIGGER tasks_terminal_immutable BEFORE UPDATE ON tasks
WHEN OLD.status IN ('completed', 'failed', 'cancelled') AND (
    NEW.status IS NOT OLD.status OR
    NEW.status_message IS NOT OLD.status_message OR
    NEW.input_requests IS NOT OLD.input_requests OR
    NEW.result IS NOT OLD.result OR
    NEW.error IS NOT OLD.error OR
    NEW.origin IS NOT OLD.origin)
BEGIN
    SELECT RAISE(ABORT, 'taskwire: a terminal task is immutable');
END;

CREATE TABLE jobs (
    task_id          TEXT    PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    state            TEXT    NOT NULL CHECK (state IN ('available', 'running', 'awaiting_input', 'done')),
    attempt          INTEGER NOT NULL DEFAULT 0,
    failures         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    run_at           INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
) STRICT;

CREATE INDEX jobs_claim ON jobs (state, run_at);

CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';

CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX outbox_created ON outbox (created_at);
