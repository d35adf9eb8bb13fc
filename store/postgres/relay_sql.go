package postgres

import "strings"

// Statements of the answer relay (relay.go), expanded like those of
// sql.go: {{schema}} is the quoted schema, {{now}} the statement's time
// ($1), and {{answers}} the answers channel as a literal.
//
// The answers table holds responses too large for a notification, one row
// each, keyed by an identity column; created_at (the forwarding node's
// clock) drives the TTL.
const (
	// $2 node, $3 response, $4 TTL ms, $5 sweep limit. Stores the
	// response and notifies its key in one statement, whose implicit
	// transaction delivers the notification only once the row is
	// committed; it first deletes up to $5 rows whose TTL passed, skipping
	// rows a receiver is taking.
	sqlForwardAnswer = `WITH swept AS (
			DELETE FROM {{schema}}.answers WHERE id IN (
				SELECT id FROM {{schema}}.answers
				WHERE created_at <= {{now}} - $4::bigint * interval '1 millisecond'
				ORDER BY created_at LIMIT $5 FOR UPDATE SKIP LOCKED)),
		r AS (
			INSERT INTO {{schema}}.answers (node, body, created_at) VALUES ($2::text, $3::bytea, {{now}})
			RETURNING id)
		SELECT pg_notify({{answers}}, 'r ' || $2::text || ' ' || id) FROM r`

	// $2 row, $3 node, $4 TTL ms. Deletes the row and returns its
	// response and whether it is still live; no row when another
	// delivery (or a sweep) took it first.
	sqlTakeAnswer = `DELETE FROM {{schema}}.answers WHERE id = $2 AND node = $3
		RETURNING body, created_at > {{now}} - $4::bigint * interval '1 millisecond'`

	// $1 node, $2 limit. The keys of the rows waiting for a node, oldest
	// first; each is then taken with sqlTakeAnswer, so that at most one
	// response is in memory at a time.
	sqlPendingAnswers = `SELECT id FROM {{schema}}.answers WHERE node = $1 ORDER BY id LIMIT $2`
)

// relaySQL substitutes the answers channel into a template.
func relaySQL(tmpl, channel string) string {
	return strings.ReplaceAll(tmpl, "{{answers}}", quoteLiteral(channel))
}
