-- 001_initial: tasks, their jobs, and the outbox of task changes.
--
-- {{schema}} is the store's schema and {{channel}} its notification
-- channel, both substituted (quoted) before the script runs. The tables
-- mirror store/sqlite: a task row holds what clients see (status,
-- outstanding input requests, result, error) and its authorization binding
-- (endpoint, tenant, principal); the origin, the input requests and
-- responses, the result and the error are BYTEA so that they keep their
-- bytes (jsonb would reformat numbers and members). A job row is the task's
-- work queue entry; attempt is the fencing token bumped at every claim.
-- Every observable change inserts an outbox row and notifies the channel in
-- the same transaction, through task_event.

CREATE TABLE {{schema}}.tasks (
    id               TEXT        PRIMARY KEY,
    endpoint         TEXT        NOT NULL,
    tenant           TEXT        NOT NULL,
    principal        TEXT        NOT NULL,
    kind             TEXT        NOT NULL,
    status           TEXT        NOT NULL CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    status_message   TEXT        NOT NULL DEFAULT '',
    origin           BYTEA       NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL CHECK (updated_at >= created_at),
    expires_at       TIMESTAMPTZ,                       -- NULL: never expires
    ttl_ms           BIGINT      NOT NULL CHECK (ttl_ms >= 0), -- 0: unlimited
    poll_interval_ms BIGINT      NOT NULL CHECK (poll_interval_ms >= 0),
    input_requests   BYTEA,                             -- JSON object, outstanding requests
    input_responses  BYTEA,                             -- JSON object, every accepted answer, bytes as received
    used_keys        TEXT[]      NOT NULL DEFAULT '{}', -- keys ever requested
    result           BYTEA,                             -- JSON CallToolResult
    error            BYTEA,                             -- JSON client-safe error
    cancel_requested BOOLEAN     NOT NULL DEFAULT false,
    idempotency_key  TEXT,
    CHECK ((status = 'input_required') = (input_requests IS NOT NULL)),
    CHECK ((status = 'completed') = (result IS NOT NULL)),
    CHECK ((status = 'failed') = (error IS NOT NULL))
);

CREATE UNIQUE INDEX tasks_idempotency ON {{schema}}.tasks (tenant, endpoint, kind, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE INDEX tasks_expires ON {{schema}}.tasks (expires_at) WHERE expires_at IS NOT NULL;

-- Terminal is terminal: nothing a client sees may change once a task has
-- completed, failed or been cancelled.
CREATE FUNCTION {{schema}}.tasks_terminal_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status IN ('completed', 'failed', 'cancelled') AND (
        NEW.status IS DISTINCT FROM OLD.status OR
        NEW.status_message IS DISTINCT FROM OLD.status_message OR
        NEW.input_requests IS DISTINCT FROM OLD.input_requests OR
        NEW.result IS DISTINCT FROM OLD.result OR
        NEW.error IS DISTINCT FROM OLD.error OR
        NEW.origin IS DISTINCT FROM OLD.origin) THEN
        RAISE EXCEPTION 'taskwire: a terminal task is immutable';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER tasks_terminal_immutable BEFORE UPDATE ON {{schema}}.tasks
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.tasks_terminal_immutable();

-- created_at repeats the task's, so that claims walk one index in order.
CREATE TABLE {{schema}}.jobs (
    task_id          TEXT        PRIMARY KEY REFERENCES {{schema}}.tasks (id) ON DELETE CASCADE,
    state            TEXT        NOT NULL CHECK (state IN ('available', 'running', 'awaiting_input', 'done')),
    attempt          BIGINT      NOT NULL DEFAULT 0,
    failures         INTEGER     NOT NULL DEFAULT 0,
    max_attempts     INTEGER     NOT NULL CHECK (max_attempts >= 1),
    run_at           TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TIMESTAMPTZ,
    CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
);

CREATE INDEX jobs_claim ON {{schema}}.jobs (run_at, created_at, task_id) WHERE state = 'available';

CREATE INDEX jobs_lease ON {{schema}}.jobs (lease_expires_at) WHERE state = 'running';

CREATE TABLE {{schema}}.outbox (
    id         BIGSERIAL   PRIMARY KEY,
    task_id    TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX outbox_created ON {{schema}}.outbox (created_at);

-- task_event records an observable change of a task: an outbox row, and a
-- notification "<node> <outbox id> <task id>" delivered at commit. node
-- names the writing Store, whose own listener skips it (the Store has
-- already published the change in process).
CREATE FUNCTION {{schema}}.task_event(p_task_id TEXT, p_at TIMESTAMPTZ, p_node TEXT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_id BIGINT;
BEGIN
    INSERT INTO {{schema}}.outbox (task_id, created_at) VALUES (p_task_id, p_at) RETURNING id INTO v_id;
    PERFORM pg_notify({{channel}}, p_node || ' ' || v_id || ' ' || p_task_id);
    RETURN v_id;
END $$;
