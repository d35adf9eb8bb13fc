-- 005_sessions_and_listing: 2025-era sessions, and tasks/list.
--
-- sessions holds one row per live (or expired, not yet swept) session of a
-- 2025-06-18 or 2025-11-25 client; every node of a fleet reads and writes
-- the same rows, so a session works on any node. The key is the lower-case
-- hex SHA-256 of the session ID, never the ID: reading the table (or a
-- backup) does not yield IDs a client could present. The owner columns are
-- the identity that opened the session; capabilities and client info are
-- the JSON the client sent in initialize, byte for byte (BYTEA, as the
-- tasks' JSON). Times are Unix milliseconds of the server's clock, which
-- the server passes in; ends_at is the earlier of expires_at and
-- last_used_at + idle_timeout_ms, kept by every write, and a session is
-- live while now < ends_at. sessions_owner serves the per-owner count of
-- Create (only that owner's live rows are read); sessions_ends the bounded
-- sweep.
--
-- secrets holds the key of the tasks/list cursors' MAC, random per schema
-- (gen_random_uuid draws from the server's strong random source; two give
-- 244 random bits) so that every node accepts the others' cursors. It
-- protects the cursors' integrity, not authorization: a listing filters by
-- the caller's binding whatever the cursor.
--
-- tasks_list lets a listing read only the caller's endpoint and tenant, in
-- listing order (newest first, then by ID), from the cursor on: a page
-- costs its length plus the caller's own expired rows, never other
-- tenants' rows. Building it locks out task writes while it runs; on a
-- large tasks table, build it first with
--   CREATE INDEX CONCURRENTLY tasks_list ON <schema>.tasks (endpoint, tenant, created_at, id);
-- and this migration keeps it (IF NOT EXISTS).
--
-- Additive: nodes of version 4 still running during a rolling upgrade
-- never read these.

CREATE TABLE {{schema}}.sessions (
    key                 TEXT   PRIMARY KEY CHECK (length(key) = 64),
    endpoint            TEXT   NOT NULL,
    tenant              TEXT   NOT NULL,
    principal           TEXT   NOT NULL,
    protocol_version    TEXT   NOT NULL,
    client_capabilities BYTEA,                -- JSON object, as sent
    client_info         BYTEA,                -- JSON object, as sent
    log_level           TEXT   NOT NULL DEFAULT '',
    created_at          BIGINT NOT NULL,
    last_used_at        BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,      -- absolute end
    idle_timeout_ms     BIGINT NOT NULL CHECK (idle_timeout_ms >= 0),
    ends_at             BIGINT NOT NULL CHECK (ends_at <= expires_at)
);

CREATE INDEX sessions_owner ON {{schema}}.sessions (endpoint, tenant, principal, ends_at);

CREATE INDEX sessions_ends ON {{schema}}.sessions (ends_at);

CREATE TABLE {{schema}}.secrets (
    name  TEXT  PRIMARY KEY,
    value BYTEA NOT NULL CHECK (length(value) >= 16)
);

INSERT INTO {{schema}}.secrets (name, value)
VALUES ('list_cursor', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

CREATE INDEX IF NOT EXISTS tasks_list ON {{schema}}.tasks (endpoint, tenant, created_at, id);
