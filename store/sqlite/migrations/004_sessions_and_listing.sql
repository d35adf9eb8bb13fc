-- 004_sessions_and_listing: 2025-era sessions, and tasks/list.
--
-- sessions holds one row per live (or expired, not yet swept) session of a
-- 2025-06-18 or 2025-11-25 client. The key is the lower-case hex SHA-256 of
-- the session ID, never the ID: reading the file does not yield IDs a
-- client could present. The owner columns are the identity that opened the
-- session; capabilities and client info are the JSON the client sent in
-- initialize, byte for byte. Times are Unix milliseconds; ends_at is the
-- earlier of expires_at and last_used_at + idle_timeout_ms, kept by every
-- write, and a session is live while now < ends_at. sessions_owner serves
-- the per-owner count of Create (it reads only that owner's live rows);
-- sessions_ends the bounded sweep (oldest ends first).
--
-- secrets holds the key of the tasks/list cursors' MAC, random per
-- database so that every process on the file accepts the others' cursors.
-- It protects the cursors' integrity, not authorization (a listing filters
-- by the caller's binding whatever the cursor), so it may sit beside the
-- tasks.
--
-- tasks_list lets a listing read only the caller's endpoint and tenant, in
-- listing order (newest first, then by ID), starting at the cursor: a page
-- costs its length plus the caller's own expired rows, never other
-- tenants' rows.
--
-- Additive: processes of version 3 on the same file never read these.

CREATE TABLE sessions (
    key                 TEXT    PRIMARY KEY CHECK (length(key) = 64),
    endpoint            TEXT    NOT NULL,
    tenant              TEXT    NOT NULL,
    principal           TEXT    NOT NULL,
    protocol_version    TEXT    NOT NULL,
    client_capabilities BLOB,                -- JSON object, as sent
    client_info         BLOB,                -- JSON object, as sent
    log_level           TEXT    NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    last_used_at        INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,    -- absolute end
    idle_timeout_ms     INTEGER NOT NULL CHECK (idle_timeout_ms >= 0),
    ends_at             INTEGER NOT NULL CHECK (ends_at <= expires_at)
) STRICT, WITHOUT ROWID;

CREATE INDEX sessions_owner ON sessions (endpoint, tenant, principal, ends_at);

CREATE INDEX sessions_ends ON sessions (ends_at);

CREATE TABLE secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL CHECK (length(value) >= 16)
) STRICT;

-- SQLite's randomblob draws from its PRNG, seeded from the operating
-- system's randomness.
INSERT INTO secrets (name, value) VALUES ('list_cursor', randomblob(32));

CREATE INDEX tasks_list ON tasks (endpoint, tenant, created_at, id);
