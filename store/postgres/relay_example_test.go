package postgres_test

import (
	"context"
	"log"

	"github.com/taskwire/taskwire/store/postgres"
)

// A node of a fleet forwards 2025-era clients' answers to the node whose
// handler waits for them through the store's database. The server takes
// the relay as server.Options.AnswerRelay, with a server.Options.NodeID
// unique in the fleet (for example the pod name).
func ExampleNewAnswerRelay() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, postgres.Options{URL: "postgres://taskwire@db.internal:5432/app"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	relay, err := postgres.NewAnswerRelay(ctx, store, postgres.AnswerRelayOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer relay.Close()
	_ = relay // server.Options{AnswerRelay: relay, NodeID: "node-1", ...}
}
