-- 006_answers: responses forwarded between nodes that do not fit a
-- notification.
--
-- A 2025-era client may POST its answer to a server-to-client request to
-- another node than the one whose handler waits for it. The receiving
-- node forwards the answer on the answers channel; an answer too large for
-- a notification payload (up to 1 MiB) is stored here and the notification
-- carries only its id. The target node deletes the row as it reads it;
-- rows no node reads are deleted once their TTL (a relay option, minutes)
-- has passed.
--
-- Additive: nodes of version 5 never read or write the table.

CREATE TABLE {{schema}}.answers (
	id         BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	node       TEXT        NOT NULL,
	body       BYTEA       NOT NULL,
	created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX answers_node ON {{schema}}.answers (node, id);
CREATE INDEX answers_created ON {{schema}}.answers (created_at);
