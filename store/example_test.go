package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/worker"
)

// ExampleOpen opens one store and hands it to the server (task manager and
// session store) and to the worker runtime (store and event publisher).
// The same code opens PostgreSQL with a spec such as
// "postgres://app@db.internal:5432/app" and Options.Schema.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "taskwire-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	spec := "sqlite:" + filepath.Join(dir, "tasks.db")

	st, err := store.Open(context.Background(), spec, store.Options{})
	if err != nil {
		log.Fatal(err) // names the file or host and what to do
	}
	defer st.Close()

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "app", Version: "1.0.0"})
	srv, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{ep},
		TaskManager: st,
		Sessions:    &server.SessionOptions{Store: st.Sessions()},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher()})
	if err != nil {
		log.Fatal(err)
	}
	_ = rt // register handlers with worker.AddHandler, then rt.Run(ctx)

	sp, _ := store.ParseSpec(spec)
	fmt.Println(sp.Kind)
	// Output: sqlite
}
