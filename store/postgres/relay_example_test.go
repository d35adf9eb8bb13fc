package postgres_test

import (
	"context"
	"log"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/postgres"
)

// A node of a fleet keeps 2025-era sessions in the shared database and
// forwards clients' answers to server-to-client requests to the node whose
// handler waits for them, through the same database. NodeID must be unique
// in the fleet (for example the pod name).
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
	srv, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "app", Version: "1.0.0"})},
		TaskManager: store, // and its sessions
		NodeID:      "node-1",
		AnswerRelay: relay,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
}
