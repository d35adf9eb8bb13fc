package node

import (
	"testing"

	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/store"
)

// TestPostgresNodeRelaysAnswers: an API node on PostgreSQL builds the
// store's answer relay (backend.AnswerRelayer) by itself, and a SQLite
// node, whose store relays nothing, has none.
func TestPostgresNodeRelaysAnswers(t *testing.T) {
	raw := pgtest.URL(t)
	cfg := testConfig(t)
	cfg.StoreSpec = StoreSpec{Spec: store.Spec{Kind: store.Postgres, URL: raw}, Schema: pgtest.Schema(t, raw, "twnode_")}
	if n := start(t, cfg); n.relay == nil {
		t.Error("a PostgreSQL API node has no answer relay")
	}
	if n := start(t, testConfig(t)); n.relay != nil {
		t.Error("a SQLite node has an answer relay")
	}
}
